from unittest import mock

import keras
import numpy as np

from keras_bert import BertBackbone
from keras_bert.layers import TransformerEncoderBlock
from tests import numpy_bert
from tests.test_case import TestCase
from tests.test_case import to_numpy

KWARGS = dict(num_heads=2, hidden_dim=8, intermediate_dim=16, dropout=0.0)


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(2, 6, 8)).astype("float32")
    mask = np.ones((2, 6), "int32")
    mask[0, 4:] = 0
    return x, mask


class TransformerEncoderBlockTest(TestCase):
    def test_layer_basics(self):
        x, mask = _inputs()
        self.run_layer_test(
            TransformerEncoderBlock, KWARGS, x,
            call_kwargs={"padding_mask": mask},
            expected_output_shape=(2, 6, 8),
            expected_num_trainable_weights=12,
        )

    def test_symbolic_outputs_are_what_the_call_returns(self):
        # The block states its output spec instead of tracing `call`; the
        # spec must be what an eager call gives, under every policy.
        x, mask = _inputs()
        for policy in ("float32", "mixed_bfloat16", "bfloat16"):
            for scores in (False, True):
                with self.subTest(policy=policy, scores=scores):
                    block = TransformerEncoderBlock(**KWARGS, dtype=policy)
                    symbolic = block(keras.Input((6, 8)),
                                     padding_mask=keras.Input((6,)),
                                     return_attention_scores=scores)
                    eager = block(x, padding_mask=mask,
                                  return_attention_scores=scores)
                    self.assertEqual(
                        [(tuple(t.shape[1:]), t.dtype)
                         for t in keras.tree.flatten(symbolic)],
                        [(tuple(t.shape[1:]),
                          keras.backend.standardize_dtype(t.dtype))
                         for t in keras.tree.flatten(eager)])

    def test_building_a_model_runs_no_block(self):
        with mock.patch.object(TransformerEncoderBlock, "call",
                               autospec=True) as call:
            backbone = BertBackbone(vocabulary_size=10, num_layers=2,
                                    num_heads=2, hidden_dim=8,
                                    intermediate_dim=16,
                                    max_sequence_length=6)
        self.assertEqual(call.call_count, 0)
        self.assertEqual(tuple(backbone.output["sequence_output"].shape),
                         (None, None, 8))

    def test_post_norm_block_matches_numpy(self):
        block = TransformerEncoderBlock(**KWARGS)
        x, mask = _inputs()
        actual = to_numpy(block(x, padding_mask=mask))
        expected = numpy_bert.encoder_block(block, x.astype("float64"), mask)
        self.assertAllClose(actual, expected, atol=1e-5)
        # Post-norm: every output position is LayerNorm'd (mean 0, var 1
        # before the affine, which starts as the identity).
        self.assertAllClose(actual.mean(-1), np.zeros((2, 6)), atol=1e-5)

    def test_dropout_is_called_in_training_only(self):
        # Outside training the dropout layers are skipped, not called as
        # identities: each call is Keras' per-call cost on PyTorch.
        block = TransformerEncoderBlock(**{**KWARGS, "dropout": 0.5})
        x, mask = _inputs()
        block(x, padding_mask=mask)
        calls = []
        original = block.dropout_layer.call

        def counted(*args, **kwargs):
            calls.append(kwargs.get("training"))
            return original(*args, **kwargs)

        block.dropout_layer.call = counted
        inference = to_numpy(block(x, padding_mask=mask))
        self.assertEqual(calls, [])
        expected = numpy_bert.encoder_block(block, x.astype("float64"), mask)
        self.assertAllClose(inference, expected, atol=1e-5)
        trained = to_numpy(block(x, padding_mask=mask, training=True))
        self.assertEqual(len(calls), 2)
        self.assertGreater(np.abs(trained - inference).max(), 1e-4)

    def test_pre_norm_option_matches_numpy(self):
        block = TransformerEncoderBlock(**KWARGS, normalize_first=True)
        x, mask = _inputs()
        actual = to_numpy(block(x, padding_mask=mask))
        expected = numpy_bert.encoder_block(block, x.astype("float64"), mask)
        self.assertAllClose(actual, expected, atol=1e-5)
        post = TransformerEncoderBlock(**KWARGS)
        post(x, padding_mask=mask)
        post.set_weights(block.get_weights())
        self.assertGreater(
            np.abs(to_numpy(post(x, padding_mask=mask)) - actual).max(), 1e-3)

    def test_exact_gelu_is_the_default_and_tanh_is_an_option(self):
        x, mask = _inputs()
        # Wide weights so pre-activations reach where the two forms differ.
        exact = TransformerEncoderBlock(**KWARGS, initializer_range=0.5)
        approx = TransformerEncoderBlock(**KWARGS, initializer_range=0.5,
                                         activation="gelu_approximate")
        exact(x, padding_mask=mask)
        approx(x, padding_mask=mask)
        approx.set_weights(exact.get_weights())
        diff = np.abs(to_numpy(exact(x, padding_mask=mask))
                      - to_numpy(approx(x, padding_mask=mask))).max()
        self.assertGreater(diff, 1e-6)
        self.assertLess(diff, 0.1)

    def test_unknown_activation_is_a_clear_error(self):
        with self.assertRaisesRegex(ValueError, "Unsupported activation 'gelu_x'"):
            TransformerEncoderBlock(**KWARGS, activation="gelu_x")
