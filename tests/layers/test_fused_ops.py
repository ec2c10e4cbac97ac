"""`keras_bert.fused_ops` and `FusedDense` compute what Keras' ops and
`Dense` compute, on every backend, and on PyTorch take the fused kernels
(one `linear` per product, SDPA on the strided heads). Speed is measured
in bench/, never here."""

from unittest import mock

import keras
import numpy as np
from keras import ops

from keras_bert import fused_ops
from keras_bert.layers.fused_dense import FusedDense
from keras_bert.layers.fused_query_key_value import FusedQueryKeyValue
from tests.test_case import TestCase
from tests.test_case import backend
from tests.test_case import skip_unless_backend
from tests.test_case import to_numpy


def _dense_pair(activation=None, dtype=None):
    fused = FusedDense(6, activation=activation,
                       bias_initializer="random_normal", dtype=dtype)
    plain = keras.layers.Dense(6, activation=activation, dtype=dtype)
    x = np.random.default_rng(0).normal(size=(2, 5, 4)).astype("float32")
    fused.build(x.shape)
    plain.build(x.shape)
    plain.set_weights(fused.get_weights())
    return fused, plain, x


def _attention_inputs(seed=0):
    rng = np.random.default_rng(seed)
    query, key, value = (rng.normal(size=(3, 7, 2, 4)).astype("float32")
                         for _ in range(3))
    padding = np.ones((3, 7), bool)
    padding[1, 4:] = False
    padding[2, :] = False  # every key padding: finite, uniform weights
    return query, key, value, padding[:, None, None, :]


class FusedDenseTest(TestCase):
    def test_layer(self):
        self.run_layer_test(FusedDense, {"units": 3, "activation": "gelu"},
                            np.ones((2, 4, 5), "float32"), (2, 4, 3),
                            expected_num_trainable_weights=2)

    def test_equals_keras_dense_forward_and_one_training_step(self):
        fused, plain, x = _dense_pair(activation="gelu")
        self.assertAllClose(fused(x), plain(x), atol=1e-6)
        before = fused.get_weights()
        # The same gradients: one SGD step moves both to the same weights.
        target = np.random.default_rng(2).normal(size=(2, 5, 6))
        for layer in (fused, plain):
            model = keras.Sequential([keras.Input((5, 4)), layer])
            model.compile(optimizer=keras.optimizers.SGD(0.5), loss="mse")
            model.train_on_batch(x, target.astype("float32"))
        for mine, theirs in zip(fused.get_weights(), plain.get_weights()):
            self.assertAllClose(mine, theirs, atol=1e-5)
        for after, start in zip(fused.get_weights(), before):
            self.assertGreater(np.abs(after - start).max(), 1e-3)

    def test_mixed_precision_computes_in_the_policy_dtype(self):
        fused, plain, x = _dense_pair(dtype="mixed_bfloat16")
        out = fused(x)
        self.assertEqual(keras.backend.standardize_dtype(out.dtype),
                         "bfloat16")
        self.assertAllClose(ops.cast(out, "float32"),
                            ops.cast(plain(x), "float32"), atol=2e-2)

    def test_lora_and_int8_still_apply(self):
        fused, plain, x = _dense_pair()
        fused.enable_lora(2, b_initializer="ones")
        plain.enable_lora(2, b_initializer="ones")
        plain.lora_kernel_a.assign(fused.lora_kernel_a)
        self.assertAllClose(fused(x), plain(x), atol=1e-5)
        fused, plain, x = _dense_pair()
        fused.quantize("int8")
        plain.quantize("int8")
        self.assertEqual(fused.quantization_mode, "int8")
        self.assertAllClose(fused(x), plain(x), atol=1e-5)

    @skip_unless_backend("torch")
    def test_one_linear_kernel_on_torch_with_gradients(self):
        import torch

        fused, _, x = _dense_pair()
        qkv = FusedQueryKeyValue(hidden_dim=4, bias_initializer="ones")
        for layer in (fused, qkv):
            with mock.patch.object(torch.nn.functional, "linear",
                                   wraps=torch.nn.functional.linear) as spy:
                layer(x)
            self.assertEqual(spy.call_count, 1)

    @skip_unless_backend("torch")
    def test_onednn_linear_without_gradients_on_torch(self):
        import torch
        from torch.profiler import profile

        fused, plain, x = _dense_pair(activation="gelu")
        # The kernel an AMD CPU takes (an Intel one keeps `addmm`).
        self.enterContext(mock.patch.object(
            fused_ops, "onednn_gemms_pay", return_value=True))
        with torch.no_grad():
            fused(x)  # the first product also checks that the op works
        with torch.no_grad(), profile() as trace:
            out = fused(x)
        kernels = [event.name for event in trace.events()]
        self.assertEqual(kernels.count("mkldnn::_linear_pointwise"), 1)
        self.assertNotIn("aten::addmm", kernels)
        self.assertAllClose(out, plain(x), atol=1e-5)
        with torch.no_grad(), profile() as trace:
            FusedDense(6, dtype="bfloat16")(x)
        self.assertNotIn("mkldnn::_linear_pointwise",
                         [event.name for event in trace.events()])


    @skip_unless_backend("torch")
    def test_addmm_where_onednn_does_not_pay(self):
        import torch
        from torch.profiler import profile

        fused, plain, x = _dense_pair()
        with mock.patch.object(fused_ops, "onednn_gemms_pay",
                               return_value=False), torch.no_grad(), \
                profile() as trace:
            out = fused(x)
        kernels = [event.name for event in trace.events()]
        self.assertNotIn("mkldnn::_linear_pointwise", kernels)
        self.assertIn("aten::addmm", kernels)
        self.assertAllClose(out, plain(x), atol=1e-5)


class FusedQueryKeyValueCallTest(TestCase):
    def test_equals_the_einsum(self):
        layer = FusedQueryKeyValue(hidden_dim=4,
                                   bias_initializer="random_normal")
        x = np.random.default_rng(1).normal(size=(2, 5, 4)).astype("float32")
        out = layer(x)
        einsum = keras.layers.EinsumDense.call(layer, ops.convert_to_tensor(x))
        self.assertEqual(tuple(out.shape), (2, 5, 3, 4))
        self.assertAllClose(out, einsum, atol=1e-6)


class DenseOfManyOutputAxesTest(TestCase):
    def test_kernel_of_more_axes_contracts_its_first(self):
        rng = np.random.default_rng(4)
        x = rng.normal(size=(2, 5, 4)).astype("float32")
        kernel = rng.normal(size=(4, 3, 2)).astype("float32")
        bias = rng.normal(size=(3, 2)).astype("float32")
        expected = np.einsum("bld,dkh->blkh", x, kernel) + bias
        out = fused_ops.dense(x, kernel, bias)
        self.assertEqual(tuple(out.shape), (2, 5, 3, 2))
        self.assertAllClose(out, expected, atol=1e-5)
        if backend() == "torch":  # the gradient path (`linear`) too
            import torch

            with torch.enable_grad():
                tracked = torch.tensor(x, requires_grad=True)
                out = fused_ops.dense(tracked, kernel, bias)
            self.assertIsNotNone(out.grad_fn)
            self.assertAllClose(out.detach(), expected, atol=1e-5)


class DotProductAttentionTest(TestCase):
    def test_equals_keras_dot_product_attention(self):
        query, key, value, mask = _attention_inputs()
        mine = fused_ops.dot_product_attention(query, key, value, mask, 0.5)
        theirs = ops.dot_product_attention(query, key, value, mask=mask,
                                           scale=0.5)
        self.assertAllClose(mine, theirs, atol=1e-6)
        self.assertAllFinite(mine)
        # The all-padding row averages its values.
        self.assertAllClose(to_numpy(mine)[2],
                            np.broadcast_to(value[2].mean(0), (7, 2, 4)),
                            atol=1e-6)

    @skip_unless_backend("torch")
    def test_torch_passes_the_strided_heads_without_copies(self):
        import torch

        query, key, value, mask = (torch.as_tensor(x)
                                   for x in _attention_inputs())
        sdpa = torch.nn.functional.scaled_dot_product_attention
        with mock.patch.object(torch.nn.functional,
                               "scaled_dot_product_attention",
                               wraps=sdpa) as spy:
            fused_ops.dot_product_attention(query, key, value, mask, 0.5)
        self.assertEqual(spy.call_count, 1)
        self.assertFalse(any(t.is_contiguous() for t in spy.call_args.args))


class PaddingMaskOrNoneTest(TestCase):
    def test_drops_a_mask_of_ones_on_eager_torch_only(self):
        ones = ops.ones((2, 5), "int32")
        padded = ops.convert_to_tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]],
                                       "int32")
        self.assertIsNone(fused_ops.padding_mask_or_none(None))
        self.assertIs(fused_ops.padding_mask_or_none(padded), padded)
        if backend() == "torch":
            self.assertIsNone(fused_ops.padding_mask_or_none(ones))
        else:  # compiled programs keep the mask they were traced with
            self.assertIs(fused_ops.padding_mask_or_none(ones), ones)

    @skip_unless_backend("torch")
    def test_kept_while_torch_compile_traces(self):
        from keras_bert._compat import torch_ops

        ones = ops.ones((2, 5), "int32")
        with mock.patch.object(torch_ops, "is_compiling", return_value=True):
            self.assertIs(fused_ops.padding_mask_or_none(ones), ones)
