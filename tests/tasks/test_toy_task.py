"""A new task added the way docs/architecture.md says: a model class, a
preprocessor class and one registration, all in this file, and nothing
else of keras_bert changed.

It then saves and loads as a preset, is written as and read from Hugging
Face files (its head under its own name), exports a SavedModel (through
the TensorFlow subprocess under JAX and PyTorch) and runs in `keras-bert
finetune`, `predict` and `evaluate`. Each of those finds the task through
its record alone: unregistered, every one of them refuses it
(`test_without_its_record_nothing_knows_the_task`).
"""

import json
import os
import shutil
import tempfile

import keras
import numpy as np
import pytest

from keras_bert.checkpoints import CheckpointError
from keras_bert.checkpoints import export_to_huggingface
from keras_bert.checkpoints import load_preset_model
from keras_bert.checkpoints import save_to_preset
from keras_bert.commands.predict import save_task_info
from keras_bert.export import export_saved_model
from keras_bert.models.bert_backbone import BertBackbone
from keras_bert.models.finetuning_task import FinetuningTask
from keras_bert.preprocessing import BertTokenizer
from keras_bert.preprocessing import Preprocessor
from keras_bert.preprocessing.preprocessing_layer import tf_preprocessing
from keras_bert.tasks import CommandTask
from keras_bert.tasks import HuggingFaceClass
from keras_bert.tasks import TaskRecord
from keras_bert.tasks import register_task
from keras_bert.tasks import unregister_task
from tests.commands.cli_helpers import cli_error
from tests.commands.cli_helpers import run_cli
from tests.export import export_test_utils
from tests.test_case import TestCase
from tests.test_case import to_numpy

# Step 1: the preprocessor (one text in, the backbone's packed ids out).


@keras.saving.register_keras_serializable(package="keras_bert_toy")
class ToyPreprocessor(Preprocessor):
    """One text -> `token_ids`, `segment_ids`, `padding_mask`."""

    @tf_preprocessing
    def call(self, x, y=None, sample_weight=None):
        packed = self.packer((self.tokenizer(x),))
        return keras.utils.pack_x_y_sample_weight(packed, y, sample_weight)


# Step 2: the model (classes from the [CLS] vector of the last layer, no
# pooler, through a head of its own name).


@keras.saving.register_keras_serializable(package="keras_bert_toy")
class ToyClassifier(FinetuningTask):
    """A linear head named `toy_head` on the [CLS] position's vector."""

    reads_pooled_output = False

    def __init__(self, backbone, num_classes, preprocessor=None,
                 label_names=None, **kwargs):
        # === Layers ===
        head = keras.layers.Dense(num_classes, dtype=backbone.dtype_policy,
                                  name="toy_head")
        # === Functional model ===
        inputs = backbone.input
        outputs = head(backbone(inputs)["sequence_output"][:, 0, :])
        super().__init__(inputs=inputs, outputs=outputs, backbone=backbone,
                         preprocessor=preprocessor, **kwargs)
        # === Config ===
        self.num_classes = num_classes
        self.label_names = label_names
        self.toy_head = head
        self.compile()

    def default_loss(self):
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def get_config(self):
        config = super().get_config()
        config.update(num_classes=self.num_classes,
                      label_names=self.label_names)
        return config


# Step 3: its record (registered by the test class, and taken back after).
TOY_TASK = TaskRecord(
    name="toy_classifier",
    model_class=f"{__name__}.ToyClassifier",
    preprocessor_class=f"{__name__}.ToyPreprocessor",
    commands=(CommandTask("toy", inputs="text", labels="classes",
                          monitor="accuracy"),),
    heads={"toy_head": "toy_outputs"},
    huggingface_classes=(HuggingFaceClass(
        "BertForToyClassification", heads=("toy_head",), id2label=True),),
    text_inputs=("sentence",),
    serving_outputs="classes",
)

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *(
    "good great fine bad awful poor movie film the a is was".split())]
LABELS = ["neg", "pos"]
TEXTS = ["a good film", "the movie was awful", "great", "poor film"]


def toy_backbone():
    return BertBackbone(vocabulary_size=len(VOCABULARY), num_layers=1,
                        num_heads=2, hidden_dim=16, intermediate_dim=32,
                        max_sequence_length=32, dropout=0.0)


def toy_model():
    preprocessor = ToyPreprocessor(BertTokenizer(VOCABULARY),
                                   sequence_length=16)
    return ToyClassifier(toy_backbone(), num_classes=2,
                         preprocessor=preprocessor, label_names=LABELS)


class ToyTaskTest(TestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        register_task(TOY_TASK)
        cls.root = tempfile.mkdtemp()
        keras.utils.set_random_seed(0)
        cls.model = toy_model()
        cls.logits = np.asarray(cls.model.predict(TEXTS, verbose=0))
        cls.preset = os.path.join(cls.root, "toy")
        save_to_preset(cls.model, cls.preset)
        # A pretrained encoder and its vocabulary, to build the task on.
        cls.pretrained = os.path.join(cls.root, "pretrained")
        save_to_preset(toy_backbone(), cls.pretrained,
                       tokenizer=BertTokenizer(VOCABULARY))

    @classmethod
    def tearDownClass(cls):
        unregister_task(TOY_TASK.name)
        shutil.rmtree(cls.root, ignore_errors=True)
        super().tearDownClass()

    def assert_same_predictions(self, model):
        self.assertIsInstance(model, ToyClassifier)
        self.assertIsInstance(model.preprocessor, ToyPreprocessor)
        self.assertAllClose(model.predict(TEXTS, verbose=0), self.logits,
                            atol=1e-5, rtol=0)

    def test_preset_round_trip(self):
        self.assert_same_predictions(load_preset_model(self.preset))
        self.assert_same_predictions(ToyClassifier.from_preset(self.preset))

    def test_from_preset_attaches_the_records_preprocessor(self):
        model = ToyClassifier.from_preset(self.pretrained, num_classes=3)
        self.assertIsInstance(model.preprocessor, ToyPreprocessor)
        self.assertEqual(model.predict(TEXTS, verbose=0).shape, (4, 3))

    def test_huggingface_round_trip(self):
        directory = os.path.join(self.get_temp_dir(), "hf")
        export_to_huggingface(self.model, directory)
        with open(os.path.join(directory, "config.json")) as handle:
            config = json.load(handle)
        self.assertEqual(config["architectures"], ["BertForToyClassification"])
        self.assertEqual(config["id2label"], {"0": "neg", "1": "pos"})
        from safetensors.numpy import load_file

        state = load_file(os.path.join(directory, "model.safetensors"))
        self.assertEqual(state["toy_outputs.weight"].shape, (2, 16))
        # The head's size and names come back from the head's weights and
        # id2label, and its weights into `toy_head`.
        reloaded = ToyClassifier.from_preset(directory)
        self.assertEqual(reloaded.label_names, LABELS)
        self.assertAllClose(to_numpy(reloaded.toy_head.kernel),
                            to_numpy(self.model.toy_head.kernel))
        self.assert_same_predictions(reloaded)

    @pytest.mark.slow
    def test_saved_model_serves_its_signature(self):
        path = os.path.join(self.get_temp_dir(), "saved_model")
        export_saved_model(self.model, path, verbose=False)
        served = export_test_utils.serve({
            "texts": (path, "serving_default",
                      {"sentence": export_test_utils.strings(TEXTS)}),
        })["texts"]
        self.assertAllClose(served["logits"], self.logits, atol=1e-4,
                            rtol=0)
        self.assertEqual([label.decode() for label in served["labels"]],
                         [LABELS[i] for i in self.logits.argmax(-1)])

    def test_predict_command_runs_a_saved_toy_model(self):
        inputs = os.path.join(self.get_temp_dir(), "in.txt")
        with open(inputs, "w") as handle:
            handle.write("\n".join(TEXTS) + "\n")
        code, printed = run_cli("predict", "--model", self.preset,
                                "--input", inputs, "--format", "json")
        self.assertEqual(code, 0)
        predictions = [json.loads(line) for line in printed.splitlines()]
        self.assertEqual([p["label"] for p in predictions],
                         [LABELS[i] for i in self.logits.argmax(-1)])

    @pytest.mark.slow
    def test_finetune_and_evaluate_commands_build_the_toy_task(self):
        data = os.path.join(self.get_temp_dir(), "train.tsv")
        rows = [("a good film", "pos"), ("great movie", "pos"),
                ("a bad film", "neg"), ("awful movie", "neg")]
        with open(data, "w") as handle:
            handle.write("text\tlabel\n" + "".join(
                f"{text}\t{label}\n" for text, label in rows))
        output = os.path.join(self.get_temp_dir(), "run")
        code, printed = run_cli(
            "finetune", "--task", "toy", "--train", data, "--validation",
            data, "--model", self.pretrained, "--output", output,
            "--epochs", "1",
            "--sequence-length", "16")
        self.assertEqual(code, 0, printed)
        best = load_preset_model(os.path.join(output, "best"))
        self.assertIsInstance(best, ToyClassifier)
        self.assertIsInstance(best.preprocessor, ToyPreprocessor)
        with open(os.path.join(output, "metrics.csv")) as handle:
            self.assertIn("val_accuracy", handle.readline())
        code, printed = run_cli("evaluate", "--model",
                                os.path.join(output, "best"), "--data", data)
        self.assertEqual(code, 0)
        self.assertEqual(json.loads(printed)["task"], "toy")

    def test_without_its_record_nothing_knows_the_task(self):
        unregister_task(TOY_TASK.name)
        self.addCleanup(register_task, TOY_TASK)
        with self.assertRaisesRegex(TypeError, "Cannot export a ToyClassifier"):
            export_saved_model(self.model, self.get_temp_dir())
        with self.assertRaisesRegex(CheckpointError, "Hugging Face"):
            export_to_huggingface(self.model, self.get_temp_dir())
        with self.assertRaisesRegex(TypeError, "no task record"):
            ToyClassifier.from_preset(self.pretrained, num_classes=2)
        self.assertIn("holds a ToyClassifier, not a fine-tuned task model",
                      cli_error("predict", "--model", self.preset,
                                "--input", os.devnull))
        finetuned = os.path.join(self.get_temp_dir(), "finetuned")
        shutil.copytree(self.preset, finetuned)
        save_task_info(finetuned, {"task": "toy", "labels": LABELS,
                                   "columns": {}})
        self.assertIn("task 'toy' is not a --task of any registered task",
                      cli_error("predict", "--model", finetuned, "--input",
                                os.devnull))
