import numpy as np
import tensorflow as tf

from keras_bert.preprocessing import BertTokenizer
from keras_bert.preprocessing.tasks import BertCrossEncoderPreprocessor
from keras_bert.preprocessing.tasks import BertTextEmbedderPreprocessor
from tests.test_case import TestCase
from tests.test_case import to_numpy

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "cat",
              "sat", "dog", "ran", "who"]


class BertTextEmbedderPreprocessorTest(TestCase):
    def setUp(self):
        super().setUp()
        self.tokenizer = BertTokenizer(VOCABULARY)

    def test_texts_eagerly_and_in_tf_data(self):
        layer = BertTextEmbedderPreprocessor(self.tokenizer, sequence_length=5)
        packed = self.run_preprocessing_layer_test(
            layer, ["a cat sat", "", "a dog ran a cat"])
        self.assertEqual(packed["token_ids"].tolist(),
                         [[2, 5, 6, 7, 3], [2, 3, 0, 0, 0], [2, 5, 8, 9, 3]])

    def test_columns_are_padded_apart_with_in_batch_labels(self):
        layer = BertTextEmbedderPreprocessor(self.tokenizer, 8,
                                             dynamic_padding=True)
        for x in ((["a cat", "who"], ["a cat sat", "a dog ran a cat"]),):
            (queries, passages), labels = to_numpy(layer(x))
            self.assertEqual(queries["token_ids"].shape, (2, 4))
            self.assertEqual(passages["token_ids"].shape, (2, 7))
            self.assertEqual(labels.tolist(), [0, 1])
        # What FinetuningTask maps over a dataset of (query, passage) pairs.
        dataset = tf.data.Dataset.from_tensor_slices(
            (["a cat", "who"], ["a dog", "ran"], ["sat", "cat"])).batch(2)
        columns, labels = next(iter(dataset.map(layer)))
        self.assertEqual(len(columns), 3)
        self.assertEqual(labels.numpy().tolist(), [0, 1])

    def test_bad_contrastive_input(self):
        layer = BertTextEmbedderPreprocessor(self.tokenizer, 8)
        with self.assertRaisesRegex(ValueError, "2 or more text columns"):
            layer((["a cat"],))
        with self.assertRaisesRegex(ValueError, "and labels"):
            layer((["a cat"], ["a dog"]), np.array([1]))

    def test_pack_texts_counts_the_truncated(self):
        layer = BertTextEmbedderPreprocessor(self.tokenizer, 4)
        packed, truncated = layer.pack_texts(["a cat", "a cat sat", ""])
        self.assertEqual(truncated, 1)
        self.assertEqual(packed["token_ids"].tolist(),
                         [[2, 5, 6, 3], [2, 5, 6, 3], [2, 3, 0, 0]])


class BertCrossEncoderPreprocessorTest(TestCase):
    def test_pairs_groups_and_errors(self):
        layer = BertCrossEncoderPreprocessor(BertTokenizer(VOCABULARY), 7)
        pairs = to_numpy(layer((["who"], ["a cat sat"])))
        self.assertEqual(pairs["token_ids"].tolist(),
                         [[2, 10, 3, 5, 6, 7, 3]])
        self.assertEqual(pairs["segment_ids"].tolist(),
                         [[0, 0, 0, 1, 1, 1, 1]])
        groups = to_numpy(layer((["who"], [["a cat sat", "a dog"]])))
        self.assertEqual(groups["token_ids"].shape, (1, 2, 7))
        self.assertEqual(groups["token_ids"][0, 0].tolist(),
                         pairs["token_ids"][0].tolist())
        revived = BertCrossEncoderPreprocessor.from_config(layer.get_config())
        self.assertEqual(revived.sequence_length, 7)
        with self.assertRaisesRegex(ValueError, "queries, passages"):
            layer(["who"])
        packed = layer.pack_pairs(["who"], ["a cat sat a dog ran"])
        self.assertEqual(packed["token_ids"].shape, (1, 7))
