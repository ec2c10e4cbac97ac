"""keras_bert's kernels for Keras' int8 inference on PyTorch: the same bits
as Keras' own path, in place only while a keras_bert model runs and only
on its thread; every other model runs Keras' own functions."""

import contextlib
import threading
from unittest import mock

import keras
import numpy as np

from keras_bert import BertBackbone
from keras_bert import torch_int8
from keras_bert._compat import torch_int8_kernels
from tests.models.tiny_models import TINY
from tests.models.tiny_models import packed_inputs
from tests.test_case import TestCase
from tests.test_case import skip_unless_backend
from tests.test_case import to_numpy


def _quantized_backbone():
    model = BertBackbone(**TINY)
    model.quantize("int8")
    return model


def _keras_function_objects():
    """The objects now at Keras' int8 call sites, by name."""
    import importlib

    return {name: getattr(importlib.import_module(module), name)
            for name, module in torch_int8_kernels._LOCATIONS.items()}


def _plain_quantized_model():
    """A Keras model of Keras' own layers, quantized by Keras."""
    dense = keras.layers.Dense(4)
    model = keras.Sequential([keras.Input((8,)), dense])
    dense.quantize("int8")
    return model


@contextlib.contextmanager
def _counting_keras_bert_kernels():
    """Counts calls of keras_bert's int8 GEMM and quantizer."""
    with mock.patch.object(torch_int8, "_int8_gemm",
                           wraps=torch_int8._int8_gemm) as gemm, \
            mock.patch.object(torch_int8, "_abs_max_quantize",
                              wraps=torch_int8._abs_max_quantize) as quantize:
        yield lambda: gemm.call_count + quantize.call_count


class FastInt8PathTest(TestCase):

    @skip_unless_backend("torch")
    def test_torch_cpu_runs_every_int8_gemm_as_an_integer_gemm(self):
        # Keras casts int8 products to int32 off CUDA, clips activations
        # with tensor bounds and wraps each product in an autograd.Function;
        # a quantized backbone sends them to the int8 GEMM and a fused
        # quantizer, without the Function when gradients are off, with the
        # same results.
        import torch
        from keras.src.backend.torch import core

        model = _quantized_backbone()
        inputs = packed_inputs()
        # QKV (einsum), attention output, 2 feed-forward per layer, pooler.
        gemms = 4 * TINY["num_layers"] + 1
        fast = {}
        # Both ways of multiplying, whichever this CPU takes by default.
        for has_dot_products in (True, False):
            with mock.patch.object(torch_int8, "_INT8_GEMM_IS_FAST",
                                   has_dot_products), \
                    mock.patch.object(torch, "_int_mm",
                                      wraps=torch._int_mm) as int_mm, \
                    mock.patch.object(
                        torch_int8, "_int8_gemm_in_float32",
                        wraps=torch_int8._int8_gemm_in_float32) as floats, \
                    mock.patch.object(torch_int8, "_abs_max_quantize",
                                      wraps=torch_int8._abs_max_quantize
                                      ) as quantize, \
                    mock.patch.object(core.CustomGradientFunction, "apply",
                                      wraps=core.CustomGradientFunction.apply
                                      ) as autograd_function:
                fast[has_dot_products] = to_numpy(
                    model.predict_on_batch(inputs))
            self.assertEqual(int_mm.call_count,
                             gemms if has_dot_products else 0)
            self.assertEqual(floats.call_count,
                             0 if has_dot_products else gemms)
            self.assertEqual(quantize.call_count, gemms)
            self.assertEqual(autograd_function.call_count, 0)
        keras_path = mock.patch.object(
            torch_int8, "use_fast_torch_int8",
            lambda model: contextlib.nullcontext())
        with keras_path, _counting_keras_bert_kernels() as ours:
            slow = to_numpy(model.predict_on_batch(inputs))
            self.assertEqual(ours(), 0)
        self.assertAllClose(fast[True], slow, atol=0, rtol=0)
        self.assertAllClose(fast[False], slow, atol=0, rtol=0)
        # A model built quantized (a reload) takes the same path.
        reloaded = BertBackbone.from_config(model.get_config())
        reloaded.set_weights(model.get_weights())
        with _counting_keras_bert_kernels() as ours:
            self.assertAllClose(to_numpy(reloaded.predict_on_batch(inputs)),
                                slow, atol=0, rtol=0)
            self.assertEqual(ours(), 2 * gemms)

    @skip_unless_backend("torch")
    def test_a_plain_keras_model_next_to_it_runs_keras_own_functions(self):
        before = _keras_function_objects()
        model = _quantized_backbone()
        model.predict_on_batch(packed_inputs())
        # Nothing of keras_bert stays in Keras' PyTorch backend.
        self.assertEqual(_keras_function_objects(), before)
        plain = _plain_quantized_model()
        x = np.random.default_rng(0).normal(size=(3, 8)).astype("float32")
        with _counting_keras_bert_kernels() as ours:
            plain_out = to_numpy(plain.predict_on_batch(x))
            model.predict_on_batch(packed_inputs())
            self.assertGreater(ours(), 0)
            counted = ours()
            plain.predict_on_batch(x)
            self.assertEqual(ours(), counted)
        self.assertEqual(_keras_function_objects(), before)
        # Keras' own int8 Dense, the same numbers as before keras_bert ran.
        self.assertAllClose(to_numpy(plain.predict_on_batch(x)), plain_out,
                            atol=0, rtol=0)

    @skip_unless_backend("torch")
    def test_other_threads_run_keras_own_functions_meanwhile(self):
        model = _quantized_backbone()
        plain = _plain_quantized_model()
        x = np.random.default_rng(0).normal(size=(3, 8)).astype("float32")
        expected = to_numpy(plain.predict_on_batch(x))
        results = {}
        with _counting_keras_bert_kernels() as ours:
            with torch_int8.use_fast_torch_int8(model):
                # keras_bert's dispatchers are in place now, for this
                # thread: another thread's Keras model goes past them.
                self.assertNotEqual(
                    _keras_function_objects()["matmul"],
                    torch_int8_kernels.keras_original("matmul"))
                worker = threading.Thread(target=lambda: results.update(
                    out=to_numpy(plain.predict_on_batch(x))))
                worker.start()
                worker.join()
            self.assertEqual(ours(), 0)
        self.assertAllClose(results["out"], expected, atol=0, rtol=0)

    @skip_unless_backend("torch")
    def test_torch_compiles_a_quantized_backbone_as_one_graph(self):
        # Keras' autograd.Function and a tracked list of axes cut a
        # compiled int8 model into many graphs.
        import torch

        model = _quantized_backbone()
        inputs = {k: torch.as_tensor(v) for k, v in packed_inputs().items()}
        with torch.no_grad():
            explanation = torch._dynamo.explain(
                lambda x: model(x, training=False)["sequence_output"]
            )(inputs)
        self.assertEqual(explanation.graph_break_count, 0,
                         [r.reason for r in explanation.break_reasons])
        self.assertEqual(explanation.graph_count, 1)

    def test_a_float_model_and_other_backends_change_nothing(self):
        model = BertBackbone(**TINY)
        with mock.patch.object(torch_int8, "keras_functions_replaced",
                               side_effect=AssertionError) as replaced:
            model.predict_on_batch(packed_inputs())
            if keras.config.backend() != "torch":
                _quantized_backbone().predict_on_batch(packed_inputs())
        replaced.assert_not_called()


def _keras_bert_kernels():
    """keras_bert's kernels in place, as inside a quantized model's call."""
    return torch_int8.use_fast_torch_int8()


class IntegerGemmTest(TestCase):

    def test_only_last_axis_contractions_become_gemms(self):
        for equation in ("bld,dkh->blkh", "ab,bc->ac", "abc,cd->abd",
                         "a,ab->b"):
            self.assertTrue(torch_int8._is_last_axis_contraction(equation),
                            equation)
        for equation in ("bld,dkh->bklh", "ab,cb->ac", "ab,bc->ca",
                         "...d,dk->...k", "ab,bc", "abb,bc->abc",
                         "ab,bc,cd->ad", "ab,ba->"):
            self.assertFalse(torch_int8._is_last_axis_contraction(equation),
                             equation)

    @skip_unless_backend("torch")
    def test_int8_products_equal_keras_own(self):
        rng = np.random.default_rng(0)
        x = rng.integers(-127, 128, (2, 5, 12)).astype("int8")
        kernel = rng.integers(-127, 128, (12, 3, 4)).astype("int8")
        expected = np.einsum("bld,dkh->blkh", x.astype("int64"),
                             kernel.astype("int64"))
        keras_own = keras.ops.matmul(x, kernel.reshape(12, 12))
        with _keras_bert_kernels():
            products = (keras.ops.einsum("bld,dkh->blkh", x, kernel),
                        keras.ops.reshape(keras.ops.matmul(
                            x, kernel.reshape(12, 12)), (2, 5, 3, 4)))
            # Float products are Keras' own.
            floats = keras.ops.matmul(
                x.astype("float32"), kernel.reshape(12, 12).astype("float32"))
        for actual in (*products, keras.ops.reshape(keras_own, (2, 5, 3, 4))):
            self.assertEqual(keras.backend.standardize_dtype(actual.dtype),
                             "int32")
            np.testing.assert_array_equal(to_numpy(actual), expected)
        self.assertEqual(keras.backend.standardize_dtype(floats.dtype),
                         "float32")

    @skip_unless_backend("torch")
    def test_float32_gemms_give_the_exact_int32_product(self):
        import torch

        rng = np.random.default_rng(0)
        depth = 2 * torch_int8._EXACT_FLOAT32_DEPTH + 300
        rows = rng.integers(-128, 128, (33, depth)).astype("int8")
        kernel = rng.integers(-128, 128, (depth, 17)).astype("int8")
        # A sum float32 cannot hold: odd and past 2**24, where float32 has
        # only even integers.
        rows[0], kernel[:, 0] = -128, -128
        rows[0, 0] = kernel[0, 0] = 1
        expected = rows.astype("int64") @ kernel.astype("int64")
        self.assertEqual(expected[0, 0], (depth - 1) * 128 * 128 + 1)
        actual = torch_int8._int8_gemm_in_float32(torch.as_tensor(rows),
                                                  torch.as_tensor(kernel))
        self.assertEqual(actual.dtype, torch.int32)
        np.testing.assert_array_equal(actual.numpy(), expected)
        # One float32 GEMM over the whole depth cannot give it.
        whole = torch.mm(torch.as_tensor(rows).float(),
                         torch.as_tensor(kernel).float()).to(torch.int64)
        self.assertFalse(np.array_equal(whole.numpy(), expected))

    def test_float32_gemms_only_on_x86_without_int8_dot_products(self):
        cases = (("x86_64", {"avx2", "fma"}, False),
                 ("x86_64", {"avx2", "avx512f", "avx512_vnni"}, True),
                 ("x86_64", {"avx2", "avx_vnni"}, True),
                 ("x86_64", {"avx2", "amx_int8"}, True),
                 ("AMD64", None, True),
                 ("aarch64", {"fp", "asimd"}, True))
        for machine, flags, expected in cases:
            with mock.patch.object(torch_int8.platform, "machine",
                                   return_value=machine), \
                    mock.patch.object(torch_int8, "_cpu_flags",
                                      return_value=flags):
                self.assertEqual(torch_int8.cpu_has_int8_dot_products(),
                                 expected, (machine, flags))

    @skip_unless_backend("torch")
    def test_activation_quantizer_gives_keras_bits(self):
        from keras.src.quantizers import quantizers

        keras_own = quantizers.abs_max_quantize
        rng = np.random.default_rng(0)
        for shape, axis in (((64, 384), -1), ((2, 9, 48), -1),
                            ((2, 9, 48), (1, 2)), ((5, 1), 0)):
            for magnitude in (1e-4, 1.0, 300.0):
                x = (rng.standard_normal(shape) * magnitude).astype("float32")
                x[0] = 0  # an all-zero token: scale 127 / epsilon
                x.flat[1] = magnitude * 40  # one outlier per tensor
                for value_range in ((-127, 127), (-63, 63)):
                    theirs = keras_own(x, axis, value_range)
                    with _keras_bert_kernels():
                        ours = quantizers.abs_max_quantize(x, axis,
                                                           value_range)
                    for a, b in zip(ours, theirs):
                        self.assertEqual(str(a.dtype), str(b.dtype))
                        np.testing.assert_array_equal(to_numpy(a),
                                                      to_numpy(b))
        # Other dtypes and the NumPy path are Keras' own.
        x = rng.standard_normal((4, 8)).astype("float32")
        for kwargs in ({"dtype": "int16", "value_range": (-300, 300)},
                       {"to_numpy": True}):
            with _keras_bert_kernels():
                ours = quantizers.abs_max_quantize(x, -1, **kwargs)[0]
            np.testing.assert_array_equal(
                to_numpy(ours), to_numpy(keras_own(x, -1, **kwargs)[0]))

    @skip_unless_backend("torch")
    def test_custom_gradients_skip_autograd_only_without_gradients(self):
        import torch
        from keras.src.backend.torch import core

        def double(x):
            def grad(*args, upstream=None):
                if upstream is None:
                    (upstream,) = args
                return upstream * 5.0
            return x * 2.0, grad

        x = torch.ones(3, requires_grad=True)
        with mock.patch.object(core.CustomGradientFunction, "apply",
                               wraps=core.CustomGradientFunction.apply
                               ) as autograd_function, _keras_bert_kernels():
            # Keras' quantized layers decorate their product at each call.
            with torch.no_grad():
                np.testing.assert_array_equal(
                    to_numpy(keras.ops.custom_gradient(double)(x)), 2.0)
            self.assertEqual(autograd_function.call_count, 0)
            keras.ops.custom_gradient(double)(x).sum().backward()
            self.assertEqual(autograd_function.call_count, 1)
        np.testing.assert_array_equal(to_numpy(x.grad), 5.0)
