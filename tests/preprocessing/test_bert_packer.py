import itertools

import numpy as np
import tensorflow as tf

from keras_bert.preprocessing import BertPacker
from keras_bert.preprocessing.bert_packer import truncated_lengths
from tests.preprocessing import parity_data
from tests.test_case import TestCase
from tests.test_case import to_numpy

CLS, SEP, PAD = 2, 3, 0


def packer(**kwargs):
    return BertPacker(cls_token_id=CLS, sep_token_id=SEP, pad_token_id=PAD,
                      **kwargs)


def keep(first, second, budget, truncate):
    kept = truncated_lengths([tf.constant([first]), tf.constant([second])],
                             budget, truncate)
    return tuple(int(k[0]) for k in kept)


class BertPackerTest(TestCase):
    def test_one_segment(self):
        out = to_numpy(packer(sequence_length=6)([[10, 11], [12, 13, 14, 15, 16]]))
        self.assertEqual(out["token_ids"].tolist(),
                         [[CLS, 10, 11, SEP, PAD, PAD],
                          [CLS, 12, 13, 14, 15, SEP]])
        self.assertEqual(out["segment_ids"].tolist(), [[0] * 6, [0] * 6])
        self.assertEqual(out["padding_mask"].tolist(),
                         [[1, 1, 1, 1, 0, 0], [1] * 6])
        for value in out.values():
            self.assertEqual(value.dtype, np.int32)

    def test_two_segments(self):
        out = to_numpy(packer(sequence_length=9)(([[10, 11]], [[20, 21, 22]])))
        self.assertEqual(out["token_ids"].tolist(),
                         [[CLS, 10, 11, SEP, 20, 21, 22, SEP, PAD]])
        self.assertEqual(out["segment_ids"].tolist(),
                         [[0, 0, 0, 0, 1, 1, 1, 1, 0]])
        self.assertEqual(out["padding_mask"].tolist(),
                         [[1, 1, 1, 1, 1, 1, 1, 1, 0]])

    def test_longest_first_rule(self):
        # (first, second, budget) -> kept, worked out by hand from the rule:
        # trim the longer one; odd leftovers go to the longer, second on ties.
        cases = {
            (3, 2, 10): (3, 2),  # fits
            (10, 2, 6): (4, 2),  # only the longer is cut
            (2, 10, 6): (2, 4),
            (10, 10, 6): (3, 3),
            (10, 10, 7): (3, 4),  # tie: the second gets the odd token
            (12, 10, 7): (4, 3),  # the longer gets it
            (10, 12, 7): (3, 4),
            (5, 4, 7): (4, 3),
            (0, 9, 4): (0, 4),
            (9, 0, 4): (4, 0),
        }
        for (a, b, budget), expected in cases.items():
            self.assertEqual(keep(a, b, budget, "longest_first"), expected,
                             msg=f"{(a, b, budget)}")

    def test_waterfall_rule(self):
        self.assertEqual(keep(10, 5, 6, "waterfall"), (6, 0))
        self.assertEqual(keep(4, 5, 6, "waterfall"), (4, 2))
        out = to_numpy(packer(sequence_length=7, truncate="waterfall")(
            ([[10, 11, 12]], [[20, 21, 22]])))
        self.assertEqual(out["token_ids"].tolist(),
                         [[CLS, 10, 11, 12, SEP, 20, SEP]])

    def test_matches_transformers_truncation(self):
        vocabulary = parity_data.MINILM_VOCABULARY
        reference = parity_data.reference_tokenizer(vocabulary)
        words = ["cat", "dog", "sat"]
        lengths = range(0, 7)
        pairs = [(" ".join(words[i % 3] for i in range(a)),
                  " ".join(words[i % 3] for i in range(b)))
                 for a, b in itertools.product(lengths, lengths)]
        first = [reference(a, add_special_tokens=False)["input_ids"]
                 for a, _ in pairs]
        second = [reference(b, add_special_tokens=False)["input_ids"]
                  for _, b in pairs]
        for length in (3, 4, 5, 8, 9, 12):
            bert_packer = BertPacker(sequence_length=length)
            out = to_numpy(bert_packer((tf.ragged.constant(first, tf.int32),
                                        tf.ragged.constant(second, tf.int32))))
            expected = reference([a for a, _ in pairs], [b for _, b in pairs],
                                 truncation=True, max_length=length,
                                 padding="max_length")
            self.assertEqual(out["token_ids"].tolist(), expected["input_ids"])
            self.assertEqual(out["segment_ids"].tolist(),
                             expected["token_type_ids"])
            self.assertEqual(out["padding_mask"].tolist(),
                             expected["attention_mask"])

    def test_dynamic_padding(self):
        layer = packer(sequence_length=8, dynamic_padding=True)
        out = to_numpy(layer([[10], [11, 12, 13]]))
        self.assertEqual(out["token_ids"].tolist(),
                         [[CLS, 10, SEP, PAD, PAD], [CLS, 11, 12, 13, SEP]])
        # Still truncated to sequence_length.
        out = to_numpy(layer([list(range(10, 30))]))
        self.assertEqual(out["token_ids"].shape, (1, 8))

    def test_unbatched_and_dense_inputs(self):
        layer = packer(sequence_length=5)
        out = to_numpy(layer(([10], [20, 21, 22])))
        self.assertEqual(out["token_ids"].tolist(), [CLS, 10, SEP, 20, SEP])
        self.assertEqual(out["segment_ids"].tolist(), [0, 0, 0, 1, 1])
        dense = to_numpy(layer(np.array([[10, 11], [12, 13]], np.int64)))
        self.assertEqual(dense["token_ids"].tolist(),
                         [[CLS, 10, 11, SEP, PAD], [CLS, 12, 13, SEP, PAD]])

    def test_int32_row_splits_and_empty_rows(self):
        # tf.data's ragged_batch and RaggedTensor.from_row_lengths on int32
        # lengths give int32 row splits; [CLS]/[SEP] rows are int64.
        first = tf.RaggedTensor.from_row_lengths(
            tf.constant([10, 11, 12], tf.int32), tf.constant([0, 3], tf.int32))
        second = tf.RaggedTensor.from_row_lengths(
            tf.constant([20, 21], tf.int32), tf.constant([2, 0], tf.int32))
        out = to_numpy(packer(sequence_length=6)((first, second)))
        self.assertEqual(out["token_ids"].tolist(),
                         [[CLS, SEP, 20, 21, SEP, PAD],
                          [CLS, 10, 11, 12, SEP, SEP]])
        self.assertEqual(out["segment_ids"].tolist(),
                         [[0, 0, 1, 1, 1, 0], [0, 0, 0, 0, 0, 1]])

    def test_eager_and_tf_data(self):
        layer = packer(sequence_length=6)
        segments = tf.ragged.constant([[10, 11], [12], [13, 14, 15, 16, 17]])
        self.run_preprocessing_layer_test(layer, segments, expected_output={
            "token_ids": np.array([[CLS, 10, 11, SEP, 0, 0],
                                   [CLS, 12, SEP, 0, 0, 0],
                                   [CLS, 13, 14, 15, 16, SEP]]),
            "segment_ids": np.zeros((3, 6)),
            "padding_mask": np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 0, 0, 0],
                                      [1] * 6]),
        })
        pairs = tf.data.Dataset.from_tensor_slices((segments, segments))
        pairs = pairs.batch(3).map(lambda a, b: layer((a, b)))
        self.assertEqual(to_numpy(next(iter(pairs)))["token_ids"][2].tolist(),
                         [CLS, 13, SEP, 13, 14, SEP])  # tie: 1 + 2

    def test_bad_inputs(self):
        with self.assertRaisesRegex(ValueError, "sequence_length"):
            packer(sequence_length=1)
        with self.assertRaisesRegex(ValueError, "truncate"):
            packer(truncate="random")
        with self.assertRaisesRegex(ValueError, "3 special tokens"):
            packer(sequence_length=2)(([1], [2]))
        with self.assertRaisesRegex(ValueError, "1 or 2 segments"):
            packer()(([1], [2], [3]))
        with self.assertRaisesRegex(TypeError, "integer token ids"):
            packer()(["a", "b"])
        with self.assertRaisesRegex(ValueError, "batch size"):
            packer()(([[1], [2]], [[3]]))
        with self.assertRaisesRegex(ValueError, "batched or all unbatched"):
            packer()(([1], [[2]]))

    def test_serialization_and_from_tokenizer(self):
        from keras_bert.preprocessing import BertTokenizer

        tokenizer = BertTokenizer(
            ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"])
        layer = BertPacker.from_tokenizer(tokenizer, sequence_length=16,
                                          truncate="waterfall")
        self.assertEqual((layer.cls_token_id, layer.sep_token_id,
                          layer.pad_token_id), (2, 3, 0))
        self.run_serialization_test(layer)
