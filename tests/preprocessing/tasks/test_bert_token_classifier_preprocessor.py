import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.preprocessing import BertTokenizer
from keras_bert.preprocessing.tasks import BertTokenClassifierPreprocessor
from tests.test_case import TestCase
from tests.test_case import to_numpy

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "john", "lives",
              "in", "york", "##shire", "new", "##castle", "."]
CLS, SEP, PAD = 2, 3, 0
X = -100  # ignored position


def preprocessor(sequence_length=10):
    return BertTokenClassifierPreprocessor(BertTokenizer(VOCABULARY),
                                           sequence_length=sequence_length)


class BertTokenClassifierPreprocessorTest(TestCase):
    def test_label_on_first_piece_only(self):
        x, y, w = to_numpy(preprocessor()(
            [["John", "lives", "in", "Yorkshire", "."]], [[1, 0, 0, 2, 0]]
        ))
        self.assertEqual(x["token_ids"].tolist(),
                         [[CLS, 5, 6, 7, 8, 9, 12, SEP, PAD, PAD]])
        # "yorkshire" = "york" "##shire": label 2 on "york" only.
        self.assertEqual(y.tolist(), [[X, 1, 0, 0, 2, X, 0, X, X, X]])
        self.assertEqual(w.tolist(), [[0, 1, 1, 1, 1, 0, 1, 0, 0, 0]])

    def test_truncation_drops_labels_with_their_pieces(self):
        words = [["Newcastle", "Yorkshire", "John", "in"]]
        x, y, _ = to_numpy(preprocessor(sequence_length=6)(words, [[3, 2, 1, 4]]))
        # Room for 4 pieces: new ##castle york ##shire; "john", "in" cut.
        self.assertEqual(x["token_ids"].tolist(), [[CLS, 10, 11, 8, 9, SEP]])
        self.assertEqual(y.tolist(), [[X, 3, X, 2, X, X]])
        positions = preprocessor(sequence_length=6).first_token_positions(words)
        self.assertEqual(positions, [[1, 3, -1, -1]])

    def test_words_without_pieces_and_positions_agree_with_labels(self):
        words = [["John", "\u200b", "lives", "Yorkshire"], ["in", "John"]]
        labels = [[1, 5, 2, 3], [4, 6]]
        layer = preprocessor()
        _, y, _ = to_numpy(layer(words, labels))
        positions = layer.first_token_positions(words)
        # The zero-width space tokenizes to nothing: no position, no label.
        self.assertEqual(positions, [[1, -1, 2, 3], [1, 2]])
        for row, (sentence_positions, sentence_labels) in enumerate(
                zip(positions, labels)):
            for position, label in zip(sentence_positions, sentence_labels):
                if position >= 0:
                    self.assertEqual(y[row, position], label)
        self.assertEqual(int((y != X).sum()), 5)

    def test_same_in_tf_data(self):
        words = [["John", "lives", "in", "Yorkshire"], ["Newcastle", "."]]
        labels = [[1, 0, 0, 2], [3, 0]]
        layer = preprocessor()
        eager = to_numpy(layer(words, labels))
        ds = tf.data.Dataset.from_tensor_slices(
            (tf.ragged.constant(words), tf.ragged.constant(labels))
        ).ragged_batch(2).map(layer)
        self.assertAllClose(to_numpy(next(iter(ds))), eager)

    def test_config_round_trip(self):
        layer = preprocessor(sequence_length=7)
        revived = BertTokenClassifierPreprocessor.from_config(layer.get_config())
        words = [["John", "lives", "in", "Yorkshire"]]
        self.assertAllClose(to_numpy(revived(words, [[1, 0, 0, 2]])),
                            to_numpy(layer(words, [[1, 0, 0, 2]])))
        self.assertIsInstance(
            keras.saving.deserialize_keras_object(
                keras.saving.serialize_keras_object(layer)),
            BertTokenClassifierPreprocessor,
        )

    def test_label_count_mismatch(self):
        with self.assertRaisesRegex(ValueError, "one label per word"):
            preprocessor()([["John", "lives"]], [[1, 0, 0]])
        with self.assertRaisesRegex(ValueError, "batch of word lists"):
            preprocessor()(tf.constant(["John lives"]))
        with self.assertRaisesRegex(TypeError, "BertTokenizer"):
            BertTokenClassifierPreprocessor("vocab.txt")

    def test_inference_without_labels(self):
        x = to_numpy(preprocessor()([["John"], ["in", "York"]]))
        self.assertEqual(sorted(x), ["padding_mask", "segment_ids", "token_ids"])
        np.testing.assert_array_equal(x["padding_mask"].sum(1), [3, 4])


@pytest.mark.large
class TokenClassifierParityTest(TestCase):
    """Labels and word positions against `transformers`' `word_ids()`."""

    def test_conll_sentences_match_transformers(self):
        from keras_bert.preprocessing.tasks import read_conll
        from tests.preprocessing import parity_data

        path = os.path.join(parity_data.DATA_DIR, "conll2003", "bio",
                            "train.txt")
        if not os.path.exists(path):
            self.skipTest(f"no CoNLL-2003 copy at {path}")
        words = read_conll(path)["words"][:200]
        labels = [[(i + j) % 9 for j in range(len(s))]
                  for i, s in enumerate(words)]
        reference = parity_data.reference_tokenizer()
        # Length 24 cuts words off in some sentences (checked below).
        ours = BertTokenClassifierPreprocessor(
            BertTokenizer(parity_data.MINILM_VOCABULARY), sequence_length=24)
        x, y, w = to_numpy(ours(words, labels))
        encoded = reference(words, is_split_into_words=True, truncation=True,
                            max_length=24, padding="max_length")
        expected = np.full_like(y, X)
        positions = []
        for i, sentence in enumerate(labels):
            first = {}
            for position, word in enumerate(encoded.word_ids(i)):
                if word is not None and word not in first:
                    first[word] = position
                    expected[i, position] = sentence[word]
            positions.append([first.get(j, -1) for j in range(len(sentence))])
        np.testing.assert_array_equal(x["token_ids"], encoded["input_ids"])
        np.testing.assert_array_equal(y, expected)
        np.testing.assert_array_equal(w, expected != X)
        self.assertEqual(ours.first_token_positions(words), positions)
        self.assertGreater(sum(-1 in p for p in positions), 20)
