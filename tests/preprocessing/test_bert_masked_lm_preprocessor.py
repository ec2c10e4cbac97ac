import numpy as np
import tensorflow as tf

from keras_bert.preprocessing import BertMaskedLMPreprocessor
from keras_bert.preprocessing import BertPreprocessor
from keras_bert.preprocessing import BertTokenizer
from tests.test_case import TestCase
from tests.test_case import to_numpy

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [
    f"w{i}" for i in range(30)]
SPECIAL = {0, 2, 3}
# Each row's second segment names its row ("w2X" for row X), so the pairing
# can be read back from the packed ids.
FIRSTS = [" ".join(f"w{(3 * r + k) % 20}" for k in range(6))
          for r in range(8)]
SECONDS = [f"w{20 + r} w{20 + r}" for r in range(8)]


def preprocessor(**kwargs):
    kwargs.setdefault("sequence_length", 16)
    return BertMaskedLMPreprocessor(BertTokenizer(VOCABULARY), **kwargs)


def unmasked(x, y, w):
    """The packed ids with the targets put back at the masked positions."""
    restored = np.array(x["token_ids"])
    for row, used in enumerate(w["mlm_logits"].astype(bool)):
        restored[row, x["mask_positions"][row][used]] = (
            y["mlm_logits"][row][used])
    return restored


class BertMaskedLMPreprocessorTest(TestCase):
    def test_masks_fifteen_percent_of_packed_strings(self):
        layer = preprocessor(seed=3)
        x, y, w = to_numpy(layer(FIRSTS))
        self.assertEqual(sorted(x), ["mask_positions", "padding_mask",
                                     "segment_ids", "token_ids"])
        # ceil(0.15 * 16) slots per row; round(0.15 * 6 words) = 1 used.
        self.assertEqual(x["mask_positions"].shape, (8, 3))
        self.assertEqual(w["mlm_logits"].sum(axis=1).tolist(), [1.0] * 8)
        plain = to_numpy(BertPreprocessor(layer.tokenizer, 16)(FIRSTS))
        restored = unmasked(x, y, w)
        self.assertEqual(restored.tolist(), plain["token_ids"].tolist())
        picked = plain["token_ids"][np.arange(8), x["mask_positions"][:, 0]]
        self.assertFalse(set(picked.tolist()) & SPECIAL)
        self.assertNotIn("nsp_logits", y)

    def test_pairs_keep_their_labels(self):
        layer = preprocessor(next_sentence_prediction=True, seed=0)
        labels = np.array([1, 0, 1, 1, 0, 0, 1, 0], "int32")
        x, y, w = to_numpy(layer((FIRSTS, SECONDS), labels))
        self.assertEqual(y["nsp_logits"].tolist(), labels.tolist())
        self.assertEqual(w["nsp_logits"].tolist(), [1.0] * 8)
        # [CLS] + 6 + [SEP] in segment 0, then 2 + [SEP] in segment 1.
        self.assertEqual(x["segment_ids"][0].tolist(),
                         [0] * 8 + [1] * 3 + [0] * 5)

    def test_makes_notnext_pairs_within_the_batch(self):
        layer = preprocessor(next_sentence_prediction=True, seed=1,
                             mask_selection_rate=0.0001)
        labels, moved = [], 0
        for _ in range(8):
            x, y, w = to_numpy(layer((FIRSTS, SECONDS)))
            ids = unmasked(x, y, w)
            # First id of segment B: w(20 + the row it came from).
            source = ids[:, 8] - VOCABULARY.index("w20")
            own = source == np.arange(8)
            self.assertEqual(y["nsp_logits"].tolist(),
                             own.astype(int).tolist())
            labels += y["nsp_logits"].tolist()
            moved += int((~own).sum())
        self.assertGreater(moved, 0)
        self.assertTrue(0.3 < np.mean(labels) < 0.7, np.mean(labels))

    def test_token_ids_skip_the_tokenizer(self):
        tokenizer = BertTokenizer(VOCABULARY)
        from_text = preprocessor(seed=5)(FIRSTS)
        ids = tokenizer(FIRSTS)
        from_ids = preprocessor(seed=5)(tf.ragged.constant(ids.to_list()))
        self.assertAllClose(to_numpy(from_ids), to_numpy(from_text))

    def test_same_seed_same_masks_and_fresh_masks_per_call(self):
        first = to_numpy(preprocessor(seed=7)(FIRSTS))
        again = preprocessor(seed=7)
        self.assertAllClose(to_numpy(again(FIRSTS)), first)
        second_call = to_numpy(again(FIRSTS))
        self.assertFalse(np.array_equal(second_call[0]["mask_positions"],
                                        first[0]["mask_positions"]))

    def test_runs_in_tf_data_with_static_mask_shape(self):
        layer = preprocessor(next_sentence_prediction=True, seed=0)
        ds = tf.data.Dataset.from_tensor_slices((FIRSTS, SECONDS)).batch(4)
        ds = ds.map(lambda a, b: layer((a, b)))
        self.assertEqual(ds.element_spec[0]["mask_positions"].shape.as_list(),
                         [None, 3])
        batches = [to_numpy(batch) for batch in ds]
        self.assertEqual(len(batches), 2)
        self.assertEqual(batches[0][1]["nsp_logits"].shape, (4,))

    def test_config_round_trip(self):
        layer = preprocessor(next_sentence_prediction=True, seed=2,
                             whole_word_masking=True, mask_selection_rate=0.2)
        revived = self.run_serialization_test(layer)
        self.assertEqual(revived.mask_selection_length, 4)
        self.assertTrue(revived.whole_word_masking)

    def test_bad_inputs_name_the_problem(self):
        with self.assertRaisesRegex(ValueError, "next_sentence_prediction"):
            preprocessor(next_sentence_prediction=True)(FIRSTS)
        with self.assertRaisesRegex(ValueError, "tuple of 3"):
            preprocessor()((FIRSTS, FIRSTS, FIRSTS))
        with self.assertRaisesRegex(ValueError, "labels"):
            preprocessor()(FIRSTS, [1] * 8)
        with self.assertRaisesRegex(TypeError, "BertTokenizer"):
            BertMaskedLMPreprocessor(VOCABULARY)
