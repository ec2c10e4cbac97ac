"""Sizes and names read from a file are checked before anything is built
(issue 52, case 2): by type and range, and against the weights' shapes."""

import json
import os
import subprocess
import sys
import textwrap

import keras

import keras_bert
from keras_bert.checkpoints import CheckpointError
from keras_bert.checkpoints.backbone_arguments import check_backbone_arguments
from keras_bert.checkpoints.config_conversion import (
    backbone_kwargs_from_bert_config)
from tests.checkpoints import reference_checkpoints as ref
from tests.checkpoints.test_confined_paths import hostile_keras_file
from tests.test_case import TestCase

TINY = dict(vocabulary_size=len(ref.VOCABULARY), num_layers=2, num_heads=2,
            hidden_dim=16, intermediate_dim=32, max_sequence_length=24)


def edit_json(filename, edit):
    with open(filename) as f:
        data = json.load(f)
    edit(data)
    with open(filename, "w") as f:
        json.dump(data, f)


def backbone_config(data):
    """The backbone's arguments inside a serialized task or backbone."""
    inner = data["config"]
    return inner["backbone"]["config"] if "backbone" in inner else inner


class RangesTest(TestCase):
    def test_each_field_names_itself_and_its_value(self):
        for change, pattern in [
            ({"vocabulary_size": 10**10}, "vocabulary_size=10000000000 is "
             "out of range"),
            ({"hidden_dim": 10**6}, "hidden_dim=1000000 is out of range"),
            ({"num_layers": 0}, "num_layers=0 is out of range"),
            ({"num_heads": "2"}, "num_heads='2' is not a whole number"),
            ({"num_heads": 3}, "num_heads=3 is not a divisor of "
             "hidden_dim=16"),
            ({"max_sequence_length": 2.5}, "max_sequence_length=2.5 is not "
             "a whole number"),
            ({"dropout": 1.0}, "dropout=1.0 is out of range"),
            ({"layer_norm_epsilon": float("nan")}, "layer_norm_epsilon=nan "
             "is not a number"),
            ({"normalize_first": "yes"}, "normalize_first='yes' is not true "
             "or false"),
            ({"activation": {"class_name": "Lambda"}},
             "activation=\\{'class_name': 'Lambda'\\} is not one of"),
            ({"vocabulary_size": 2**22, "hidden_dim": 2**15,
              "intermediate_dim": 2**17}, "describes a model of .* weights, "
             "more than"),
        ]:
            with self.assertRaisesRegex(CheckpointError,
                                        "^model/config.json:? " + pattern):
                check_backbone_arguments({**TINY, **change},
                                         "model/config.json")

    def test_huggingface_config_is_checked_in_its_own_words(self):
        config = {"vocab_size": 10**10, "hidden_size": 16,
                  "num_hidden_layers": 2, "num_attention_heads": 2,
                  "intermediate_size": 32}
        with self.assertRaisesRegex(CheckpointError,
                                    "config.json: vocab_size=10000000000"):
            backbone_kwargs_from_bert_config(config)
        with self.assertRaisesRegex(CheckpointError,
                                    "hidden_act=\\{'a': 1\\} is not "
                                    "supported"):
            backbone_kwargs_from_bert_config(
                {**config, "vocab_size": 30, "hidden_act": {"a": 1}})

    def test_a_preset_with_a_dict_activation(self):
        preset = os.path.join(self.get_temp_dir(), "preset")
        keras_bert.BertBackbone(**TINY).save_to_preset(preset)
        edit_json(os.path.join(preset, "config.json"),
                  lambda data: backbone_config(data).update(
                      activation={"class_name": "function"}))
        with self.assertRaisesRegex(CheckpointError,
                                    "config.json: activation="):
            keras_bert.BertBackbone.from_preset(preset, load_weights=False)

    def test_a_task_preset_with_a_huge_head(self):
        preset = os.path.join(self.get_temp_dir(), "preset")
        keras_bert.BertClassifier(keras_bert.BertBackbone(**TINY),
                                  num_classes=2).save_to_preset(preset)
        edit_json(os.path.join(preset, "config.json"),
                  lambda data: data["config"].update(num_classes=10**9))
        with self.assertRaisesRegex(
                CheckpointError, "config.json: num_classes=1000000000 is out "
                "of range"):
            keras_bert.BertClassifier.from_preset(preset, load_weights=False)

    def test_a_keras_file_with_a_huge_vocabulary(self):
        path = os.path.join(self.get_temp_dir(), "model.keras")
        keras_bert.BertBackbone(**TINY).save(path)

        def huge(config):
            config["config"]["vocabulary_size"] = 10**10
            return config

        hostile = hostile_keras_file(path, huge)
        with self.assertRaisesRegex(
                ValueError, "BertBackbone config: vocabulary_size="
                "10000000000 is out of range"):
            keras.saving.load_model(hostile)


class AgainstTheWeightsTest(TestCase):
    def test_huggingface_config_larger_than_its_weights(self):
        directory = self.get_temp_dir()
        ref.make_huggingface("BertModel", directory)
        edit_json(os.path.join(directory, "config.json"),
                  lambda data: data.update(vocab_size=4_000_000))
        with self.assertRaisesRegex(
                CheckpointError, "config.json: vocab_size=4000000 but .* "
                "says 36 \\(embeddings.word_embeddings.weight \\(36, 16\\)"):
            keras_bert.BertBackbone.from_preset(directory)
        edit_json(os.path.join(directory, "config.json"),
                  lambda data: data.update(vocab_size=36,
                                           num_hidden_layers=3))
        with self.assertRaisesRegex(
                CheckpointError, "num_hidden_layers=3 but .* says 2"):
            keras_bert.BertBackbone.from_preset(directory)
        # The architecture alone has no weights to disagree with.
        self.assertEqual(keras_bert.BertBackbone.from_preset(
            directory, load_weights=False).num_layers, 3)

    def test_keras_preset_config_larger_than_its_weights(self):
        preset = os.path.join(self.get_temp_dir(), "preset")
        keras_bert.BertClassifier(keras_bert.BertBackbone(**TINY),
                                  num_classes=2).save_to_preset(preset)
        for field, value, stored in [("vocabulary_size", 1_000_000, 36),
                                     ("max_sequence_length", 4096, 24),
                                     ("intermediate_dim", 64, 32)]:
            edit_json(os.path.join(preset, "config.json"),
                      lambda data: backbone_config(data).update(
                          {**TINY, field: value}))
            with self.assertRaisesRegex(
                    CheckpointError, f"config.json: {field}={value} but "
                    f".*model.weights.h5 says {stored} "):
                keras_bert.BertClassifier.from_preset(preset)

    def test_refused_before_memory_grows(self):
        # A child process, so that its peak memory is this load's alone.
        directory = self.get_temp_dir()
        ref.make_huggingface("BertModel", directory)
        preset = os.path.join(self.get_temp_dir(), "preset")
        keras_bert.BertBackbone(**TINY).save_to_preset(preset)
        edit_json(os.path.join(preset, "config.json"),
                  lambda data: data["config"].update(
                      vocabulary_size=10**10, hidden_dim=10**6))
        # In range, 1 GB of embeddings, next to weights of 36 x 16.
        edit_json(os.path.join(directory, "config.json"),
                  lambda data: data.update(
                      vocab_size=1_000_000, hidden_size=256,
                      intermediate_size=1024, num_attention_heads=4))
        script = textwrap.dedent(f"""
            import json, resource
            import keras_bert
            keras_bert.BertBackbone(**{TINY!r})
            def peak():
                return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            for path in ({preset!r}, {directory!r}):
                before = peak()
                try:
                    keras_bert.BertBackbone.from_preset(path)
                    error = None
                except Exception as caught:
                    error = f"{{type(caught).__name__}}: {{caught}}"
                print(json.dumps({{"error": error,
                                   "grown_kb": peak() - before}}))
        """)
        result = subprocess.run([sys.executable, "-c", script],
                                capture_output=True, text=True, timeout=600)
        self.assertEqual(result.returncode, 0, result.stderr[-2000:])
        reports = [json.loads(line) for line in
                   result.stdout.strip().splitlines()[-2:]]
        self.assertRegex(reports[0]["error"],
                         "^CheckpointError: .*config.json: vocabulary_size="
                         "10000000000 is out of range")
        self.assertRegex(reports[1]["error"],
                         "^CheckpointError: .*config.json: vocab_size="
                         "1000000 but")
        for report in reports:
            self.assertLess(report["grown_kb"], 100 * 1024, report)
