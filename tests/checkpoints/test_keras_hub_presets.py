"""keras-hub BERT presets, saved by keras-hub itself, load into keras_bert."""

import json
import os
import shutil
import tempfile
import types
from unittest import mock

import keras
import numpy as np

import keras_bert
from keras_bert.checkpoints import CheckpointError
from keras_bert.checkpoints import detect_layout
from keras_bert.checkpoints import load_checkpoint_weights
from keras_bert.checkpoints.keras_hub_presets import keras_hub_state
from keras_bert.checkpoints.weight_conversion import load_state_into_model
from keras_bert.preprocessing import vocabulary_io
from tests.checkpoints.hub_fixtures import add_to_kaggle_cache
from tests.checkpoints.test_presets_and_export import randomized
from tests.test_case import TestCase
from tests.test_case import to_numpy

ATOL = 1e-5
VOCABULARY = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "quick", "brown",
    "fox", "jump", "##s", "##ed", "over", "a", "lazy", "dog", ".", ",", "!",
    "?", "it", "was", "cafe", "café", "un", "##known",
]
SENTENCES = ["The quick brown fox jumps over the lazy dog.",
             "A DOG, a Fox! It was jumped?", "unknown café, Café Cafe",
             "zebra   the\tfox"]
TINY = {"vocabulary_size": len(VOCABULARY), "num_layers": 2, "num_heads": 2,
        "hidden_dim": 16, "intermediate_dim": 32, "max_sequence_length": 24}


def backbone_inputs():
    return {
        "token_ids": np.array([[2, 5, 6, 7, 8, 3, 13, 15, 3, 0],
                               [2, 14, 15, 16, 3, 0, 0, 0, 0, 0]], "int32"),
        "segment_ids": np.array([[0] * 6 + [1] * 3 + [0],
                                 [0] * 10], "int32"),
        "padding_mask": np.array([[1] * 9 + [0], [1] * 5 + [0] * 5],
                                 "int32"),
    }


def save_other_architecture(directory):
    import keras_hub

    keras_hub.models.DistilBertBackbone(
        vocabulary_size=len(VOCABULARY), num_layers=1, num_heads=2,
        hidden_dim=8, intermediate_dim=16, max_sequence_length=16,
    ).save_to_preset(directory)
    keras_hub.models.DistilBertTokenizer(
        vocabulary=VOCABULARY).save_to_preset(directory)


class KerasHubPresetTest(TestCase):
    """Presets saved by keras-hub: a classifier task and a bare backbone."""

    @classmethod
    def setUpClass(cls):
        import keras_hub

        cls.scratch = tempfile.mkdtemp()
        cls.hub_tokenizer = keras_hub.models.BertTokenizer(
            vocabulary=VOCABULARY, lowercase=True)
        cls.hub_backbone = randomized(keras_hub.models.BertBackbone(**TINY))
        cls.hub_classifier = keras_hub.models.BertTextClassifier(
            cls.hub_backbone, num_classes=3,
            preprocessor=keras_hub.models.BertTextClassifierPreprocessor(
                cls.hub_tokenizer, sequence_length=16))
        randomized(cls.hub_classifier.get_layer("logits"), seed=1)
        cls.task_dir = os.path.join(cls.scratch, "task")
        cls.hub_classifier.save_to_preset(cls.task_dir)
        cls.backbone_dir = os.path.join(cls.scratch, "backbone")
        cls.hub_backbone.save_to_preset(cls.backbone_dir)
        cls.hub_tokenizer.save_to_preset(cls.backbone_dir)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.scratch, ignore_errors=True)

    def hub_outputs(self):
        return to_numpy(self.hub_backbone(backbone_inputs()))

    def test_what_keras_hub_writes_is_recognised(self):
        for directory in (self.task_dir, self.backbone_dir):
            with open(os.path.join(directory, "config.json")) as f:
                config = json.load(f)
            self.assertEqual(config["registered_name"],
                             "keras_hub>BertBackbone")
            with open(os.path.join(directory, "tokenizer.json")) as f:
                tokenizer_config = json.load(f)
            # A Keras config, not a Hugging Face tokenizers file.
            self.assertEqual(tokenizer_config["class_name"], "BertTokenizer")
            self.assertNotIn("model", tokenizer_config)
            self.assertTrue(os.path.isfile(os.path.join(
                directory, "assets", "tokenizer", "vocabulary.txt")))
            self.assertEqual(detect_layout(directory), "keras_hub")
            self.assertTrue(vocabulary_io.has_vocabulary(directory))
        self.assertTrue(os.path.isfile(
            os.path.join(self.task_dir, "task.weights.h5")))

    def test_backbone_outputs_equal_keras_hub(self):
        expected = self.hub_outputs()
        for directory in (self.backbone_dir, self.task_dir):
            backbone = keras_bert.BertBackbone.from_preset(directory)
            self.assertEqual(backbone.activation, "gelu_approximate")
            actual = to_numpy(backbone(backbone_inputs()))
            for key in ("sequence_output", "pooled_output"):
                self.assertAllClose(actual[key], expected[key], atol=ATOL,
                                    rtol=0)

    def test_every_keras_hub_variable_has_a_canonical_name(self):
        state, origins = keras_hub_state(self.hub_classifier)
        self.assertEqual(len(state), len(self.hub_classifier.weights))
        self.assertEqual(sorted(origins.values()),
                         sorted(v.path for v in self.hub_classifier.weights))
        self.assertFalse([key for key in state if "/" in key])

    def test_unmapped_variable_is_listed_as_unexpected(self):
        extra = keras.Variable(np.zeros(3), name="kernel_scale")
        model = types.SimpleNamespace(
            weights=[*self.hub_backbone.weights, extra])
        state, origins = keras_hub_state(model)
        backbone = keras_bert.BertBackbone(**TINY)
        with self.assertRaisesRegex(CheckpointError,
                                    r"Unexpected \(1\).*\n  kernel_scale"):
            load_state_into_model(backbone, state, origins)

    def test_classifier_task_preset_loads_its_head(self):
        model = keras_bert.BertClassifier.from_preset(self.task_dir)
        self.assertEqual(model.num_classes, 3)
        expected = to_numpy(self.hub_classifier(backbone_inputs()))
        self.assertAllClose(to_numpy(model(backbone_inputs())), expected,
                            atol=ATOL, rtol=0)

    def test_classifier_on_backbone_preset_keeps_head_init(self):
        with self.assertLogs("keras_bert.checkpoints", "INFO") as logs:
            model = keras_bert.BertClassifier.from_preset(self.backbone_dir,
                                                          num_classes=2)
        self.assertIn("classifier_head", "\n".join(logs.output))
        self.assertAllClose(to_numpy(model.backbone(backbone_inputs())),
                            self.hub_outputs(), atol=ATOL, rtol=0)

    def test_tokenizer_ids_equal_keras_hub(self):
        for directory in (self.backbone_dir, self.task_dir):
            tokenizer = keras_bert.BertTokenizer.from_preset(directory)
            self.assertTrue(tokenizer.lowercase)
            self.assertEqual(tokenizer.model_max_length,
                             TINY["max_sequence_length"])
            self.assertEqual(tokenizer.get_vocabulary(), VOCABULARY)
            for sentence in SENTENCES:
                expected = np.asarray(
                    self.hub_tokenizer.tokenize(sentence)).tolist()
                self.assertEqual(to_numpy(tokenizer(sentence)).tolist(),
                                 expected, sentence)

    def test_preprocessor_packs_as_keras_hub(self):
        preprocessor = keras_bert.BertPreprocessor.from_preset(
            self.task_dir, sequence_length=16)
        first, second = SENTENCES[:2], SENTENCES[2:]
        expected = to_numpy(self.hub_classifier.preprocessor(
            x=(first, second)))
        actual = to_numpy(preprocessor((first, second)))
        for key in ("token_ids", "segment_ids", "padding_mask"):
            self.assertEqual(actual[key].astype("int32").tolist(),
                             expected[key].astype("int32").tolist(), key)

    def test_architecture_only(self):
        backbone = keras_bert.BertBackbone.from_preset(self.task_dir,
                                                       load_weights=False)
        self.assertEqual(backbone.hidden_dim, TINY["hidden_dim"])
        self.assertEqual(backbone.max_sequence_length,
                         TINY["max_sequence_length"])

    def test_failed_load_leaves_model_unchanged(self):
        model = keras_bert.BertBackbone(**{**TINY, "intermediate_dim": 24})
        before = [to_numpy(v) for v in model.weights]
        with self.assertRaisesRegex(CheckpointError, "feedforward"):
            load_checkpoint_weights(model, self.backbone_dir)
        for value, variable in zip(before, model.weights):
            self.assertAllClose(to_numpy(variable), value, atol=0, rtol=0)

    def test_other_architecture_is_refused(self):
        directory = os.path.join(self.get_temp_dir(), "distilbert")
        save_other_architecture(directory)
        message = r"registered_name 'keras_hub>DistilBertBackbone'"
        with self.assertRaisesRegex(CheckpointError, message):
            keras_bert.BertBackbone.from_preset(directory)
        with self.assertRaisesRegex(CheckpointError, message):
            keras_bert.BertClassifier.from_preset(directory, num_classes=2)
        message = r"registered_name 'keras_hub>DistilBertTokenizer'"
        with self.assertRaisesRegex(ValueError, message):
            keras_bert.BertTokenizer.from_preset(directory)
        self.assertFalse(vocabulary_io.has_vocabulary(directory))

    def test_edited_class_name_is_refused(self):
        directory = os.path.join(self.get_temp_dir(), "edited")
        shutil.copytree(self.backbone_dir, directory)
        config_file = os.path.join(directory, "config.json")
        with open(config_file) as f:
            config = json.load(f)
        config["class_name"] = "RobertaBackbone"
        with open(config_file, "w") as f:
            json.dump(config, f)
        with self.assertRaisesRegex(CheckpointError,
                                    r"class_name 'RobertaBackbone'"):
            keras_bert.BertBackbone.from_preset(directory)


class KerasHubOtherPresetsTest(TestCase):
    def test_quantized_preset_is_refused(self):
        import keras_hub

        backbone = keras_hub.models.BertBackbone(**TINY)
        backbone.quantize("int8")
        directory = os.path.join(self.get_temp_dir(), "int8")
        backbone.save_to_preset(directory)
        with self.assertRaisesRegex(CheckpointError,
                                    "dtype is a DTypePolicyMap"):
            keras_bert.BertBackbone.from_preset(directory)

    def test_masked_lm_preset_loads_backbone_and_says_what_it_skips(self):
        import keras_hub

        backbone = randomized(keras_hub.models.BertBackbone(**TINY))
        masked_lm = keras_hub.models.BertMaskedLM(backbone)
        directory = os.path.join(self.get_temp_dir(), "mlm")
        masked_lm.save_to_preset(directory)
        with self.assertLogs("keras_bert.checkpoints", "INFO") as logs:
            pretrainer = keras_bert.BertPretrainer.from_preset(directory)
        self.assertIn("BertMaskedLM", "\n".join(logs.output))
        expected = to_numpy(backbone(backbone_inputs()))
        actual = to_numpy(pretrainer.backbone(backbone_inputs()))
        self.assertAllClose(actual["sequence_output"],
                            expected["sequence_output"], atol=ATOL, rtol=0)


class KerasHubPresetNameTest(TestCase):
    """keras-hub preset names and kaggle:// handles, from kagglehub's cache
    (built here in its own layout), load as keras-hub loads the files."""

    @classmethod
    def setUpClass(cls):
        from keras_bert.checkpoints.kaggle_download import keras_hub_handle

        KerasHubPresetTest.setUpClass.__func__(cls)
        cls.kaggle_cache = os.path.join(cls.scratch, "kagglehub")
        cls.handles = {}
        for name, directory in (("bert_tiny_en_uncased", cls.backbone_dir),
                                ("bert_tiny_en_uncased_sst2", cls.task_dir)):
            cls.handles[name] = keras_hub_handle(name)
            add_to_kaggle_cache(cls.kaggle_cache,
                                cls.handles[name][len("kaggle://"):],
                                directory)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.scratch, ignore_errors=True)

    def setUp(self):
        super().setUp()
        self.enterContext(mock.patch.dict(
            os.environ, {"KAGGLEHUB_CACHE": self.kaggle_cache}))

    def test_backbone_by_preset_name_and_kaggle_handle(self):
        expected = to_numpy(self.hub_backbone(backbone_inputs()))
        for preset in ("bert_tiny_en_uncased",
                       self.handles["bert_tiny_en_uncased"]):
            actual = to_numpy(keras_bert.BertBackbone.from_preset(preset)(
                backbone_inputs()))
            self.assertAllClose(actual["sequence_output"],
                                expected["sequence_output"], atol=ATOL,
                                rtol=0, msg=preset)

    def test_classifier_by_task_preset_name(self):
        model = keras_bert.BertClassifier.from_preset(
            "bert_tiny_en_uncased_sst2")
        self.assertAllClose(to_numpy(model(backbone_inputs())),
                            to_numpy(self.hub_classifier(backbone_inputs())),
                            atol=ATOL, rtol=0)
        self.assertEqual(model.preprocessor.tokenizer.get_vocabulary(),
                         VOCABULARY)

    def test_uncached_handle_names_the_cache(self):
        with self.assertRaisesRegex(CheckpointError, "kagglehub"):
            keras_bert.BertBackbone.from_preset(
                "kaggle://keras/bert/keras/bert_nope/1")
