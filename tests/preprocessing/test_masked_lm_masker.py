import numpy as np
import tensorflow as tf

from keras_bert.preprocessing import BertTokenizer
from keras_bert.preprocessing import MaskedLMMasker
from tests.test_case import TestCase
from tests.test_case import to_numpy

PAD, CLS, SEP, MASK = 0, 101, 102, 103
VOCABULARY_SIZE = 1000
SPECIAL = [PAD, CLS, SEP, MASK]


def random_batch(num_sequences=4000, length=48, seed=0):
    """`[CLS] words [SEP] [PAD]...` rows with 3-45 words in 200..999."""
    rng = np.random.default_rng(seed)
    token_ids = np.full((num_sequences, length), PAD, np.int32)
    lengths = rng.integers(3, length - 2, size=num_sequences)
    for row, n in enumerate(lengths):
        token_ids[row, 0] = CLS
        token_ids[row, 1:n + 1] = rng.integers(200, VOCABULARY_SIZE, size=n)
        token_ids[row, n + 1] = SEP
    return token_ids, lengths


def masker(**kwargs):
    config = dict(vocabulary_size=VOCABULARY_SIZE, mask_token_id=MASK,
                  unselectable_token_ids=[PAD, CLS, SEP],
                  excluded_random_token_ids=list(range(100)),
                  mask_selection_length=12, seed=7)
    config.update(kwargs)
    return MaskedLMMasker(**config)


class MaskedLMMaskerTest(TestCase):
    def test_statistics(self):
        token_ids, lengths = random_batch()
        out = to_numpy(masker()(token_ids))
        weights = out["mask_weights"] > 0
        positions = out["mask_positions"]
        original = np.take_along_axis(token_ids, positions, axis=1)[weights]
        corrupted = np.take_along_axis(out["token_ids"], positions, axis=1)
        corrupted = corrupted[weights]

        # Per row: round(15% of the words), at least 1, at most 12.
        expected = np.clip(np.round(lengths * 0.15), 1, 12)
        np.testing.assert_array_equal(weights.sum(axis=1), expected)
        self.assertEqual(out["mask_weights"].dtype, np.float32)
        np.testing.assert_array_equal(out["mask_ids"][weights], original)
        self.assertFalse(np.isin(original, SPECIAL).any())
        # Positions ascending and unique within each row.
        for row in range(50):
            chosen = positions[row][weights[row]]
            self.assertTrue(np.all(np.diff(chosen) > 0))
        # Nothing outside the selection changes.
        changed = out["token_ids"] != token_ids
        self.assertEqual(changed.sum(), (corrupted != original).sum())

        masked = corrupted == MASK
        kept = corrupted == original
        replaced = ~masked & ~kept
        # ~14k selections: the binomial std of a 10% share is 0.25%. (A
        # random token equal to the original counts as kept: 0.01% here.)
        self.assertGreater(len(original), 12000)
        self.assertAlmostEqual(masked.mean(), 0.8, delta=0.012)
        self.assertAlmostEqual(replaced.mean(), 0.1, delta=0.01)
        self.assertAlmostEqual(kept.mean(), 0.1, delta=0.01)
        # Random replacements never use special or excluded ids.
        self.assertTrue((corrupted[replaced] >= 100).all())
        self.assertFalse(np.isin(corrupted[replaced], SPECIAL).any())

    def test_rates_are_arguments(self):
        token_ids, _ = random_batch(num_sequences=500)
        out = to_numpy(masker(mask_selection_rate=0.5, mask_token_rate=0.0,
                              random_token_rate=1.0,
                              mask_selection_length=None)(token_ids))
        weights = out["mask_weights"] > 0
        corrupted = np.take_along_axis(
            out["token_ids"], out["mask_positions"], axis=1)[weights]
        self.assertFalse((corrupted == MASK).any())
        self.assertGreater(weights.sum(axis=1).max(), 12)  # no cap

    def test_at_least_one_and_empty_rows(self):
        out = to_numpy(masker()(tf.ragged.constant(
            [[CLS, 500, SEP], [CLS, SEP], [CLS, 500, 501, SEP]])))
        self.assertEqual(out["mask_weights"].sum(axis=1).tolist(), [1, 0, 1])
        self.assertEqual(out["mask_ids"][0, 0], 500)
        self.assertEqual(out["mask_positions"][0, 0], 1)
        self.assertEqual([len(r) for r in out["token_ids"]], [3, 2, 4])
        self.assertEqual(out["token_ids"][1], [CLS, SEP])

    def test_seeds_and_fresh_masks_per_epoch(self):
        token_ids, _ = random_batch(num_sequences=64)
        first = to_numpy(masker(seed=3)(token_ids))
        again = to_numpy(masker(seed=3)(token_ids))
        other = to_numpy(masker(seed=4)(token_ids))
        self.assertAllClose(first, again)
        self.assertFalse(np.array_equal(first["mask_positions"],
                                        other["mask_positions"]))
        dataset = tf.data.Dataset.from_tensor_slices(token_ids).batch(64)
        dataset = dataset.map(masker(seed=3))
        epoch_1 = to_numpy(next(iter(dataset)))
        epoch_2 = to_numpy(next(iter(dataset)))
        self.assertAllClose(epoch_1, first)  # same seed, same first draw
        self.assertFalse(np.array_equal(epoch_1["mask_positions"],
                                        epoch_2["mask_positions"]))

    def test_dict_inputs_and_unbatched(self):
        token_ids, _ = random_batch(num_sequences=2, length=16)
        out = to_numpy(masker()({"token_ids": token_ids,
                                 "segment_ids": np.zeros_like(token_ids)}))
        self.assertEqual(sorted(out), ["mask_ids", "mask_positions",
                                       "mask_weights", "segment_ids",
                                       "token_ids"])
        single = to_numpy(masker()(token_ids[0]))
        self.assertEqual(single["token_ids"].shape, (16,))
        self.assertEqual(single["mask_positions"].shape, (12,))

    def test_whole_word_masking(self):
        vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un",
                      "##aff", "##able", "cat", "dog", "sat", "##s"]
        tokenizer = BertTokenizer(vocabulary)
        layer = MaskedLMMasker.from_tokenizer(
            tokenizer, whole_word_masking=True, mask_selection_rate=0.3,
            mask_selection_length=8, seed=1)
        self.assertEqual(layer.continuation_token_ids, [6, 7, 11])
        self.assertEqual(layer.unselectable_token_ids, [2, 3, 0])
        words = [[5, 6, 7], [8], [9, 11], [10]]
        rng = np.random.default_rng(0)
        rows = []
        for _ in range(400):
            order = rng.permutation(len(words))
            rows.append([2] + sum((words[i] for i in order), []) + [3])
        token_ids = np.array(rows, np.int32)
        out = to_numpy(layer(token_ids))
        selected = np.zeros(token_ids.shape, bool)
        for row, (positions, weights) in enumerate(
                zip(out["mask_positions"], out["mask_weights"])):
            selected[row, positions[weights > 0]] = True
        for row in range(len(rows)):
            start = 1
            for piece in np.split(token_ids[row, 1:-1], np.flatnonzero(
                    ~np.isin(token_ids[row, 1:-1], [6, 7, 11]))[1:]):
                span = selected[row, start:start + len(piece)]
                self.assertTrue(span.all() or not span.any(),
                                msg=f"row {row}: word {piece} split")
                start += len(piece)
        # 7 tokens * 0.3 -> 2: a 3-piece word never fits; at least 1 chosen.
        counts = selected.sum(axis=1)
        self.assertTrue(((counts >= 1) & (counts <= 2)).all())

    def test_eager_tf_data_and_config_agree(self):
        # Masks are random, so each path gets a fresh layer with one seed.
        token_ids = tf.ragged.constant([[CLS, 300, 301, 302, SEP], [CLS, 400,
                                                                    SEP]])
        eager = to_numpy(masker()(token_ids))
        dataset = tf.data.Dataset.from_tensor_slices(token_ids).batch(2)
        self.assertAllClose(to_numpy(next(iter(dataset.map(masker())))),
                            eager)
        revived = MaskedLMMasker.from_config(masker().get_config())
        self.assertAllClose(to_numpy(revived(token_ids)), eager)

    def test_bad_arguments_and_inputs(self):
        with self.assertRaisesRegex(ValueError, "mask_selection_rate"):
            masker(mask_selection_rate=1.5)
        with self.assertRaisesRegex(ValueError, r"mask_token_rate \+"):
            masker(mask_token_rate=0.8, random_token_rate=0.3)
        with self.assertRaisesRegex(ValueError, "continuation_token_ids"):
            masker(whole_word_masking=True)
        with self.assertRaisesRegex(ValueError, "outside the vocabulary"):
            masker(mask_token_id=VOCABULARY_SIZE)
        with self.assertRaisesRegex(TypeError, "integer token ids"):
            masker()(["a", "b"])

    def test_serialization(self):
        self.run_serialization_test(masker(whole_word_masking=True,
                                           continuation_token_ids=[300, 301]))
