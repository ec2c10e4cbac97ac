"""`FusedLayerNormalization` computes what Keras' `LayerNormalization`
computes, and on PyTorch in one kernel without float32 round trips.
Speed is measured in bench/, never here."""

import keras
import numpy as np
from keras import ops

from keras_bert.layers.fused_layer_normalization import (
    FusedLayerNormalization)
from tests.test_case import TestCase
from tests.test_case import skip_unless_backend
from tests.test_case import to_numpy


def _pair(dtype=None, **kwargs):
    """The fused and Keras' layer with the same random scale and offset."""
    rng = np.random.default_rng(0)
    x = (3 * rng.normal(size=(2, 5, 8)) + 1).astype("float32")
    fused = FusedLayerNormalization(epsilon=1e-12, dtype=dtype, **kwargs)
    plain = keras.layers.LayerNormalization(epsilon=1e-12, dtype=dtype,
                                            **kwargs)
    fused.build(x.shape)
    plain.build(x.shape)
    fused.set_weights([rng.normal(size=w.shape).astype(w.dtype)
                       for w in fused.get_weights()])
    plain.set_weights(fused.get_weights())
    return fused, plain, x


class FusedLayerNormalizationTest(TestCase):
    def test_layer(self):
        self.run_layer_test(FusedLayerNormalization, {"epsilon": 1e-12},
                            np.ones((2, 4, 5), "float32"), (2, 4, 5),
                            expected_num_trainable_weights=2)

    def test_equals_keras_layer_in_float32(self):
        fused, plain, x = _pair()
        self.assertAllClose(fused(x), plain(x), atol=1e-6)

    def test_half_precision_agrees_to_the_last_place(self):
        for dtype in ("bfloat16", "mixed_bfloat16"):
            fused, plain, x = _pair(dtype=dtype)
            out = fused(x)
            self.assertEqual(keras.backend.standardize_dtype(out.dtype),
                             "bfloat16")
            mine = to_numpy(ops.cast(out, "float32"))
            theirs = to_numpy(ops.cast(plain(x), "float32"))
            # One bfloat16 unit in the last place: 2**-7 of the value.
            np.testing.assert_array_less(np.abs(mine - theirs),
                                         np.abs(theirs) / 128 + 1e-6,
                                         err_msg=dtype)

    def test_other_axes_and_rms_scaling_take_keras_call(self):
        for kwargs in ({"axis": [1, 2]}, {"rms_scaling": True},
                       {"center": False}):
            with self.subTest(**kwargs):
                fused, plain, x = _pair(**kwargs)
                self.assertAllClose(fused(x), plain(x), atol=1e-6)

    @skip_unless_backend("torch")
    def test_torch_normalizes_bfloat16_without_float32_copies(self):
        import torch
        from torch.profiler import profile

        for layer in _pair(dtype="bfloat16")[:2]:
            x = torch.ones((2, 5, 8), dtype=torch.bfloat16)
            with torch.no_grad(), profile() as trace:
                layer(x)
            kernels = [event.name for event in trace.events()]
            self.assertEqual(kernels.count("aten::native_layer_norm"), 1)
            if isinstance(layer, FusedLayerNormalization):
                self.assertNotIn("aten::_to_copy", kernels)
            else:  # Keras' layer: up to float32 and back
                self.assertIn("aten::_to_copy", kernels)
