import numpy as np

from keras_bert.layers.sentence_pooling import SentencePooling
from tests.test_case import TestCase
from tests.test_case import to_numpy

TOKENS = np.random.default_rng(0).normal(size=(3, 5, 4)).astype("float32")
MASK = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]], "int32")


class SentencePoolingTest(TestCase):
    def test_layer_shapes_config_and_mixed_precision(self):
        self.run_layer_test(SentencePooling, {"mode": "mean"}, TOKENS,
                            (3, 4), call_kwargs={"padding_mask": MASK},
                            expected_num_trainable_weights=0)

    def test_modes_against_numpy(self):
        keep = MASK[:, :, None].astype(bool)
        mean = (TOKENS * keep).sum(1) / keep.sum(1)
        maximum = np.where(keep, TOKENS, -np.inf).max(1)
        for mode, expected in (("mean", mean), ("cls", TOKENS[:, 0]),
                               ("max", maximum)):
            raw = to_numpy(SentencePooling(mode, normalize=False)(
                TOKENS, MASK))
            self.assertAllClose(raw, expected, atol=1e-6)
            unit = to_numpy(SentencePooling(mode)(TOKENS, MASK))
            self.assertAllClose(
                unit, expected / np.linalg.norm(expected, axis=-1,
                                                keepdims=True), atol=1e-6)

    def test_padding_does_not_change_the_vector(self):
        padded = TOKENS.copy()
        padded[MASK == 0] = 1e4  # what a model leaves at padded positions
        for mode in ("mean", "max"):
            layer = SentencePooling(mode)
            self.assertAllClose(layer(padded, MASK), layer(TOKENS, MASK),
                                atol=1e-6)

    def test_row_without_tokens_pools_to_zero(self):
        mask = MASK.copy()
        mask[2] = 0
        for mode in ("mean", "max"):
            vectors = to_numpy(SentencePooling(mode)(TOKENS, mask))
            self.assertTrue(np.all(vectors[2] == 0))
            self.assertAllFinite(vectors)

    def test_texts_sharing_a_row_pool_apart(self):
        # Row 0 holds texts 1 (positions 0-1) and 2 (2-4); row 1 one text
        # (0-2) and padding; the third slot of each row is empty.
        numbers = np.array([[1, 1, 2, 2, 2], [1, 1, 1, 0, 0]], "int32")
        tokens = TOKENS[:2]
        for mode in ("mean", "cls", "max"):
            layer = SentencePooling(mode)
            shared = to_numpy(layer(tokens, numbers, texts_per_row=3))
            self.assertEqual(shared.shape, (2, 3, 4))
            alone = [(tokens[0:1, 0:2], shared[0, 0]),
                     (tokens[0:1, 2:5], shared[0, 1]),
                     (tokens[1:2, 0:3], shared[1, 0])]
            for text, vector in alone:
                expected = to_numpy(layer(text, np.ones(text.shape[:2],
                                                        "int32")))[0]
                self.assertAllClose(vector, expected, atol=1e-6)
            self.assertTrue(np.all(shared[:, 2] == 0))
            self.assertTrue(np.all(shared[1, 1] == 0))

    def test_rejects_unknown_mode(self):
        with self.assertRaisesRegex(ValueError, "mean_sqrt_len"):
            SentencePooling("mean_sqrt_len")
