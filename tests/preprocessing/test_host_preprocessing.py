"""Token ids and packed rows without TensorFlow
(`keras_bert.preprocessing.host_preprocessing`): the same as the
TensorFlow layers' on real text and on every normalization rule, for each
tokenizer setting; the text embedder's `pack_texts` on both paths; and a
model's preprocessor built and used under JAX or PyTorch without importing
TensorFlow."""

import os
import subprocess
import sys
from unittest import mock

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.preprocessing import BertPacker
from keras_bert.preprocessing import BertPreprocessor
from keras_bert.preprocessing import BertTokenizer
from keras_bert.preprocessing import bert_preprocessor
from keras_bert.preprocessing import host_preprocessing
from keras_bert.preprocessing.host_preprocessing import host_token_ids
from keras_bert.preprocessing.host_preprocessing import pack_segments
from keras_bert.preprocessing.host_preprocessing import token_id_lists
from keras_bert.preprocessing.tasks import BertTextEmbedderPreprocessor
from tests.preprocessing import parity_data
from tests.test_case import TestCase
from tests.test_case import to_numpy

TOY_VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "qu",
                  "##ick", "fox", ".", "Fox", "é", "e", "東", "京"]


def layer_ids(tokenizer, texts):
    return [list(map(int, row)) for row in tokenizer(texts).to_list()]


class HostTokenIdsTest(TestCase):
    @pytest.mark.large
    def test_datasets_and_hard_strings(self):
        tokenizer = BertTokenizer(parity_data.MINILM_VOCABULARY)
        texts = [text for group in parity_data.dataset_texts(300).values()
                 for text in group] + parity_data.HARD_STRINGS
        self.assertGreater(len(texts), 1000)
        self.assertEqual(host_token_ids(tokenizer, texts),
                         layer_ids(tokenizer, texts))

    def test_every_setting(self):
        texts = parity_data.HARD_STRINGS + [
            "The quick Fox.", "thé quick fox", "東京 [MASK]the[SEP] fox",
            "[mask] [UNK]", "quickquick"]
        settings = [
            {}, {"lowercase": False}, {"strip_accents": False},
            {"lowercase": False, "strip_accents": True},
            {"split_cjk": False}, {"max_input_chars_per_word": 3},
            {"special_tokens_in_strings": True},
            {"lowercase": False, "special_tokens_in_strings": True},
        ]
        for vocabulary in (TOY_VOCABULARY, parity_data.MINILM_VOCABULARY):
            for kwargs in settings:
                with self.subTest(vocabulary=len(vocabulary), **kwargs):
                    tokenizer = BertTokenizer(vocabulary, **kwargs)
                    self.assertEqual(host_token_ids(tokenizer, texts),
                                     layer_ids(tokenizer, texts))

    def test_a_changed_setting_is_followed(self):
        tokenizer = BertTokenizer(TOY_VOCABULARY)
        self.assertEqual(host_token_ids(tokenizer, ["Fox"]), [[8]])
        tokenizer.lowercase = False
        self.assertEqual(host_token_ids(tokenizer, ["Fox"]),
                         layer_ids(tokenizer, ["Fox"]))
        self.assertEqual(host_token_ids(tokenizer, ["Fox"]), [[10]])

    def test_without_the_tokenizers_package(self):
        tokenizer = BertTokenizer(TOY_VOCABULARY)
        saved = sys.modules.get("tokenizers")
        sys.modules["tokenizers"] = None  # import fails
        try:
            self.assertIsNone(host_token_ids(tokenizer, ["the fox"]))
        finally:
            if saved is None:
                del sys.modules["tokenizers"]
            else:
                sys.modules["tokenizers"] = saved


class PackSegmentsTest(TestCase):
    def test_as_the_packer(self):
        rng = np.random.default_rng(0)
        lengths = [(0, 4), (1, 1), (5, 9), (9, 2), (10, 10), (23, 0)]
        firsts, seconds = (
            [[int(i) for i in rng.integers(5, 30, size=pair[n])]
             for pair in lengths] for n in (0, 1))
        for segments in ([firsts], [firsts, seconds]):
            for sequence_length in (3, 4, 11, 12, 40):
                for truncate in ("longest_first", "waterfall"):
                    for dynamic_padding in (False, True):
                        with self.subTest(
                                segments=len(segments),
                                sequence_length=sequence_length,
                                truncate=truncate,
                                dynamic_padding=dynamic_padding):
                            packer = BertPacker(
                                sequence_length=sequence_length,
                                cls_token_id=2, sep_token_id=3,
                                pad_token_id=0, truncate=truncate,
                                dynamic_padding=dynamic_padding)
                            expected = packer(tuple(
                                tf.ragged.constant(segment, tf.int32)
                                for segment in segments))
                            actual = pack_segments(
                                segments, sequence_length, 2, 3, 0,
                                truncate=truncate,
                                dynamic_padding=dynamic_padding)
                            for key in ("token_ids", "segment_ids",
                                        "padding_mask"):
                                self.assertEqual(actual[key].dtype,
                                                 np.int32)
                                np.testing.assert_array_equal(
                                    actual[key], to_numpy(expected[key]))

    def test_no_examples(self):
        packed = pack_segments([[]], 8, 2, 3, 0, dynamic_padding=True)
        self.assertEqual(packed["token_ids"].shape, (0, 2))


class HostArraysTest(TestCase):
    def test_what_the_layer_gives_for_texts_and_pairs(self):
        texts = ["The quick Fox.", "thé 東京 " * 9, ""]
        for kwargs in ({}, {"truncate": "waterfall"},
                       {"dynamic_padding": True}):
            preprocessor = BertPreprocessor(
                BertTokenizer(TOY_VOCABULARY), sequence_length=12, **kwargs)
            for x in (texts, (texts, texts[::-1])):
                with self.subTest(pairs=isinstance(x, tuple), **kwargs):
                    arrays = preprocessor.host_arrays(x)
                    expected = preprocessor(x)
                    for key in ("token_ids", "segment_ids", "padding_mask"):
                        np.testing.assert_array_equal(
                            arrays[key], to_numpy(expected[key]))

    def test_other_input_takes_the_layer(self):
        preprocessor = BertPreprocessor(BertTokenizer(TOY_VOCABULARY),
                                        sequence_length=8)
        for x in ("one string", {"a": ["x"]}, (["a"], ["b", "c"]),
                  (["a"], ["b"], ["c"]), [b"bytes"], np.array(["a"])):
            with self.subTest(x=x):
                self.assertIsNone(preprocessor.host_arrays(x))
        with mock.patch.object(bert_preprocessor, "MAX_EAGER_EXAMPLES", 1):
            self.assertIsNone(preprocessor.host_arrays(["a", "b"]))

    def test_predict_gives_the_same_logits_on_both_paths(self):
        from keras_bert import BertBackbone
        from keras_bert import BertClassifier

        preprocessor = BertPreprocessor(BertTokenizer(TOY_VOCABULARY),
                                        sequence_length=12)
        model = BertClassifier(
            BertBackbone(vocabulary_size=len(TOY_VOCABULARY), num_layers=1,
                         num_heads=2, hidden_dim=8, intermediate_dim=16,
                         max_sequence_length=12),
            num_classes=3, preprocessor=preprocessor)
        for x in (["The quick Fox.", "the fox", "東京"],
                  (["the fox", "qu"], ["fox .", "the the the"])):
            ours = model.predict(x, verbose=0)
            with mock.patch.object(preprocessor, "host_arrays",
                                   lambda *_: None):
                layers = model.predict(x, verbose=0)
            self.assertAllClose(ours, layers, atol=1e-6)


class PackTextsTest(TestCase):
    def test_the_rows_of_the_layers(self):
        preprocessor = BertTextEmbedderPreprocessor(
            BertTokenizer(parity_data.MINILM_VOCABULARY), sequence_length=16)
        texts = ["a gripping film", "Crème brûlée " * 10, "東京", ""]
        packer = BertPacker.from_tokenizer(
            preprocessor.tokenizer, sequence_length=16, dynamic_padding=True)
        expected = packer(preprocessor.tokenizer(texts))
        packed, truncated = preprocessor.pack_texts(texts)
        self.assertEqual(truncated, 1)
        for key in ("token_ids", "segment_ids", "padding_mask"):
            np.testing.assert_array_equal(packed[key],
                                          to_numpy(expected[key]))
            self.assertEqual(packed[key].dtype, np.int32)


class TokenIdListsTest(TestCase):
    def test_the_layers_ids_on_every_backend(self):
        tokenizer = BertTokenizer(TOY_VOCABULARY)
        texts = ["The quick Fox.", "", "thé 東京"]
        self.assertEqual(token_id_lists(tokenizer, texts),
                         layer_ids(tokenizer, texts))


def layers_only():
    """Within the block, token_id_lists takes the layer's path."""
    return mock.patch.object(host_preprocessing, "host_token_ids",
                             lambda *_: None)


# Loads an embedder and a classifier from presets, encodes and predicts,
# then says whether TensorFlow was imported and saves what they gave.
_RUN = """
import sys
import numpy as np
from keras_bert import BertClassifier
from keras_bert import BertTextEmbedder
texts = ["w1 w2 w3 .", "w3 w2 ."]
vectors = BertTextEmbedder.from_preset(sys.argv[1]).encode(texts)
logits = BertClassifier.from_preset(sys.argv[2]).predict(texts, verbose=0)
print("TENSORFLOW", "tensorflow" in sys.modules)
np.save(sys.argv[3], np.concatenate([vectors, logits], axis=1))
"""


class WithoutTensorFlowTest(TestCase):
    def test_models_load_encode_and_predict_without_tensorflow(self):
        backend = keras.config.backend()
        if backend == "tensorflow":
            self.skipTest("TensorFlow is the backend")
        from keras_bert import BertClassifier
        from keras_bert import BertTextEmbedder
        from tests.commands.cli_helpers import write_toy_pretrainer_preset

        root = self.get_temp_dir()
        preset = write_toy_pretrainer_preset(root)[0]
        classifier_preset = os.path.join(root, "classifier")
        classifier = BertClassifier.from_preset(preset, num_classes=3)
        classifier.save_to_preset(classifier_preset)
        output = os.path.join(root, "outputs.npy")
        result = subprocess.run(
            [sys.executable, "-c", _RUN, preset, classifier_preset, output],
            capture_output=True, text=True, timeout=600,
            env={**os.environ, "KERAS_BACKEND": backend})
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("TENSORFLOW False", result.stdout)
        # What the layers' path gives, in this process.
        texts = ["w1 w2 w3 .", "w3 w2 ."]
        embedder = BertTextEmbedder.from_preset(preset)
        with layers_only(), mock.patch.object(
                classifier.preprocessor, "host_arrays", lambda *_: None):
            expected = np.concatenate(
                [embedder.encode(texts),
                 classifier.predict(texts, verbose=0)], axis=1)
        np.testing.assert_allclose(np.load(output), expected, atol=1e-6)
