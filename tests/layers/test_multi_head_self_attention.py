import numpy as np

from keras_bert.layers import MultiHeadSelfAttention
from tests.test_case import TestCase
from tests.test_case import to_numpy

KWARGS = dict(num_heads=2, hidden_dim=8, dropout=0.0)


def _inputs(batch=2, length=5, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(batch, length, 8)).astype("float32")
    mask = np.ones((batch, length), "int32")
    mask[1, 3:] = 0
    return x, mask


class MultiHeadSelfAttentionTest(TestCase):
    def test_layer_basics(self):
        x, mask = _inputs()
        self.run_layer_test(
            MultiHeadSelfAttention, KWARGS, x,
            call_kwargs={"padding_mask": mask},
            expected_output_shape=(2, 5, 8),
            expected_num_trainable_weights=4,
        )

    def test_fused_and_explicit_paths_agree(self):
        layer = MultiHeadSelfAttention(**KWARGS)
        x, mask = _inputs()
        fused = layer(x, padding_mask=mask)
        explicit, _ = layer(x, padding_mask=mask, return_attention_scores=True)
        self.assertAllClose(fused, explicit, atol=1e-5)

    def test_padded_keys_get_no_attention(self):
        layer = MultiHeadSelfAttention(**KWARGS)
        x, mask = _inputs()
        _, probs = layer(x, padding_mask=mask, return_attention_scores=True)
        probs = to_numpy(probs)
        self.assertEqual(probs[1, :, :, 3:].max(), 0.0)
        self.assertAllClose(probs.sum(-1), np.ones(probs.shape[:-1]),
                            atol=1e-5)

    def test_attention_mask_keeps_two_texts_in_one_row_apart(self):
        layer = MultiHeadSelfAttention(**KWARGS)
        x = _inputs()[0][:1]
        # Tokens 0-1 are one text, 2-4 another.
        text = np.array([0, 0, 1, 1, 1])
        block = (text[:, None] == text[None, :])[None]
        for explicit in (False, True):
            shared = layer(x, attention_mask=block,
                           return_attention_scores=explicit)
            shared = to_numpy(shared[0] if explicit else shared)
            self.assertAllClose(shared[:, :2], to_numpy(layer(x[:, :2])),
                                atol=1e-5)
            self.assertAllClose(shared[:, 2:], to_numpy(layer(x[:, 2:])),
                                atol=1e-5)
        # Combined with a padding mask: the last key is also dropped.
        mask = np.array([[1, 1, 1, 1, 0]])
        _, probs = layer(x, padding_mask=mask, attention_mask=block,
                         return_attention_scores=True)
        probs = to_numpy(probs)
        self.assertEqual(probs[0, :, :2, 2:].max(), 0.0)
        self.assertEqual(probs[0, :, 2:, :2].max(), 0.0)
        self.assertEqual(probs[0, :, :, 4].max(), 0.0)

    def test_all_padding_row_is_finite_in_every_dtype(self):
        x, mask = _inputs()
        mask[0] = 0
        for policy in ("float32", "float16", "bfloat16"):
            layer = MultiHeadSelfAttention(**KWARGS, dtype=policy)
            self.assertAllFinite(layer(x, padding_mask=mask))
            out, _ = layer(x, padding_mask=mask, return_attention_scores=True)
            self.assertAllFinite(out)

    def test_attention_dropout_only_in_training(self):
        layer = MultiHeadSelfAttention(num_heads=2, hidden_dim=8, dropout=0.5)
        x, mask = _inputs()
        first = to_numpy(layer(x, padding_mask=mask, training=True))
        second = to_numpy(layer(x, padding_mask=mask, training=True))
        self.assertGreater(np.abs(first - second).max(), 1e-4)
        self.assertAllClose(layer(x, padding_mask=mask),
                            layer(x, padding_mask=mask, training=False))

    def test_heads_must_divide_hidden(self):
        with self.assertRaisesRegex(ValueError, "hidden_dim=10.*num_heads=3"):
            MultiHeadSelfAttention(num_heads=3, hidden_dim=10)
