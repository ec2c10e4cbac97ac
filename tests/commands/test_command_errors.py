"""Every command fails on one line that names the file, the traceback only
with --verbose (issue 52, case 5)."""

import contextlib
import io
import json
import os
from unittest import mock

import keras

from keras_bert import cli
from keras_bert.checkpoints import save_to_preset
from keras_bert.models.bert_backbone import BertBackbone
from keras_bert.models.bert_classifier import BertClassifier
from keras_bert.preprocessing import BertPreprocessor
from keras_bert.preprocessing import BertTokenizer
from tests.commands.cli_helpers import cli_error
from tests.test_case import TestCase
from tests.training.toy_corpus import toy_vocabulary


def run_with_stderr(*argv):
    errors = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(errors):
        code = cli.main(list(argv))
    return code, errors.getvalue()


class CommandErrorsTest(TestCase):
    def setUp(self):
        super().setUp()
        tokenizer = BertTokenizer(toy_vocabulary())
        backbone = BertBackbone(
            vocabulary_size=tokenizer.vocabulary_size(), num_layers=1,
            num_heads=2, hidden_dim=8, intermediate_dim=16,
            max_sequence_length=16)
        self.preset = os.path.join(self.get_temp_dir(), "best")
        save_to_preset(BertClassifier(
            backbone, num_classes=2,
            preprocessor=BertPreprocessor(tokenizer, sequence_length=8)),
            self.preset)
        self.input = os.path.join(self.get_temp_dir(), "input.txt")
        with open(self.input, "w") as f:
            f.write("w1 w2 .\n")

    def add_lambda_layer(self):
        """A preset whose preprocessor is a Lambda (code, refused in safe
        mode)."""
        config_file = os.path.join(self.preset, "config.json")
        with open(config_file) as f:
            config = json.load(f)
        config["config"]["preprocessor"] = keras.saving.serialize_keras_object(
            keras.layers.Lambda(lambda x: x))
        with open(config_file, "w") as f:
            json.dump(config, f)
        return config_file

    def test_a_lambda_preset_is_one_line_naming_its_config(self):
        config_file = self.add_lambda_layer()
        errors = cli_error("predict", "--model", self.preset, "--input",
                           self.input)
        self.assertTrue(errors.startswith(
            f"keras-bert predict: error: {config_file}: Requested the "
            "deserialization of a `Lambda` layer"), errors)
        self.assertNotIn("Traceback", errors)
        # --verbose shows where it came from, then the same line.
        code, errors = run_with_stderr("--verbose", "predict", "--model",
                                       self.preset, "--input", self.input)
        self.assertEqual(code, 2)
        self.assertIn("Traceback (most recent call last)", errors)
        self.assertIn(f"keras-bert predict: error: {config_file}:",
                      errors.splitlines()[-1])

    def test_torn_files_name_themselves(self):
        weights = os.path.join(self.preset, "model.weights.h5")
        with open(weights, "r+b") as f:
            f.truncate(os.path.getsize(weights) // 2)
        self.assertIn(f"{weights} is truncated or not a Keras weights file",
                      cli_error("predict", "--model", self.preset, "--input",
                                self.input))
        task_file = os.path.join(self.preset, "finetune.json")
        with open(task_file, "w") as f:
            f.write('{"task": ')
        self.assertIn(f"{task_file}: Expecting value", cli_error(
            "evaluate", "--model", self.preset, "--data", self.input))
        index = os.path.join(self.get_temp_dir(), "index.npy")
        for path in (index, index.replace(".npy", ".json")):
            with open(path, "w") as f:
                f.write("not an index")
        self.assertIn(f"keras-bert search: error: {index}: ",
                      cli_error("search", index, "a query"))

    def test_an_unexpected_error_is_one_line_too(self):
        with mock.patch("keras_bert.commands.predict.load_finetuned",
                        side_effect=RuntimeError("out of\nmemory")):
            code, errors = run_with_stderr("predict", "--model", self.preset,
                                           "--input", self.input)
        self.assertEqual(code, 1)
        self.assertEqual(errors, "keras-bert predict: error: RuntimeError: "
                         "out of memory (--verbose shows the traceback)\n")
