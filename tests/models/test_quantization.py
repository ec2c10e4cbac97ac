"""int8 quantization (`quantize("int8")`) of the backbone and the tasks.

What is checked: which layers are quantized (the GEMMs, not the embedding
tables) and that their kernels really are int8; the outputs move a little
(int8 rounding) but stay close; a quantized backbone or task saves to
`.keras` and to a preset and reloads identical, on every backend; a task's
compiled predict function is rebuilt, so `predict` runs the int8 model.
"""

import os
import warnings

import keras
import numpy as np
import pytest

from keras_bert import BertBackbone
from keras_bert import BertClassifier
from tests.models.tiny_models import TINY
from tests.models.tiny_models import packed_inputs
from tests.test_case import TestCase
from tests.test_case import skip_unless_backend
from tests.test_case import to_numpy


def _gemm_layers(model):
    return [layer for layer in model._flatten_layers(include_self=False)
            if isinstance(layer, (keras.layers.Dense,
                                  keras.layers.EinsumDense))]


def _cosines(a, b):
    a, b = np.asarray(a, "float64"), np.asarray(b, "float64")
    return (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(
        b, axis=-1)


class QuantizationTest(TestCase):

    def test_int8_quantizes_every_gemm_and_no_embedding(self):
        model = BertBackbone(**TINY)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.quantize("int8")
        # Keras warns for every layer it cannot quantize (LayerNorm,
        # Dropout, ...) and JAX for every kernel it converts: none of that
        # reaches the user.
        self.assertEqual([str(w.message) for w in caught], [])
        gemms = _gemm_layers(model)
        # 4 per block (fused QKV, attention output, FFN in and out) + pooler.
        self.assertEqual(len(gemms), 4 * TINY["num_layers"] + 1)
        for layer in gemms:
            self.assertEqual(layer.quantization_mode, "int8", layer.path)
            self.assertEqual(keras.backend.standardize_dtype(
                layer._kernel.dtype), "int8", layer.path)
        fused = model.transformer_layers[0].attention.query_key_value
        self.assertEqual(tuple(fused._kernel.shape), (32, 3, 32))
        for table in (model.token_embedding,
                      model.embeddings.segment_embedding):
            self.assertIsNone(table.quantization_mode)

    def test_int8_outputs_stay_close_to_float(self):
        model = BertBackbone(**TINY)
        inputs = packed_inputs()
        expected = to_numpy(model(inputs))
        model.quantize("int8")
        actual = to_numpy(model(inputs))
        real = inputs["padding_mask"].astype(bool)
        sequence = (actual["sequence_output"][real],
                    expected["sequence_output"][real])
        # int8 rounding moves every output a little (a model that was not
        # quantized would match exactly), but keeps its direction.
        self.assertGreater(np.abs(sequence[0] - sequence[1]).max(), 1e-4)
        self.assertGreater(_cosines(*sequence).min(), 0.995)
        self.assertGreater(_cosines(actual["pooled_output"],
                                    expected["pooled_output"]).min(), 0.995)

    def test_filters_replace_the_default(self):
        model = BertBackbone(**TINY)
        model.quantize("int8", filters="intermediate_dense")
        quantized = sorted(layer.path for layer in _gemm_layers(model)
                           if layer.quantization_mode)
        self.assertEqual(quantized, [
            f"transformer_layer_{i}/intermediate_dense" for i in range(2)])

    def test_quantized_backbone_reloads_identical(self):
        model = BertBackbone(**TINY)
        model.quantize("int8")
        inputs = packed_inputs()
        restored = self.run_model_saving_test(model, inputs, atol=0)
        self.assertEqual(restored.pooler.quantization_mode, "int8")
        preset = os.path.join(self.get_temp_dir(), "preset")
        model.save_to_preset(preset)
        from_preset = BertBackbone.from_preset(preset)
        self.assertAllClose(from_preset(inputs), model(inputs), atol=0,
                            rtol=0)
        for layer in _gemm_layers(from_preset):
            self.assertEqual(layer.quantization_mode, "int8", layer.path)

    def test_unquantized_config_is_unchanged(self):
        # Only a quantized model stores a per-layer policy map.
        config = BertBackbone(**TINY).get_config()
        self.assertEqual(config["dtype"]["class_name"], "DTypePolicy")

    def test_classifier_quantize_changes_predict_and_reloads(self):
        model = BertClassifier(BertBackbone(**TINY), num_classes=3,
                               dropout=0.0)
        inputs = packed_inputs()
        before = model.predict_on_batch(inputs)
        model.quantize("int8")
        after = model.predict_on_batch(inputs)
        # A stale compiled predict function would return `before` exactly.
        self.assertGreater(np.abs(after - before).max(), 1e-6)
        self.assertAllClose(after, to_numpy(model(inputs)), atol=1e-6)
        self.assertEqual(model.backbone.pooler.quantization_mode, "int8")
        backbone_layers = set(map(id, _gemm_layers(model.backbone)))
        heads = [layer for layer in _gemm_layers(model)
                 if id(layer) not in backbone_layers]
        self.assertEqual(len(heads), 1)
        self.assertIsNone(heads[0].quantization_mode)
        restored = self.run_model_saving_test(model, inputs, atol=0)
        self.assertEqual(restored.backbone.transformer_layers[1]
                         .intermediate_dense.quantization_mode, "int8")

    @pytest.mark.large
    def test_minilm_int8_keeps_sentence_embeddings(self):
        # Real weights, real sentences: int8 vectors point where float
        # ones do (mean over real tokens, as sentence-transformers pools).
        from keras_bert.preprocessing import BertPreprocessor
        from tests.checkpoints.reference_checkpoints import MINILM_DIR
        from tests.export.export_test_utils import sst2_sentences

        inputs = to_numpy(BertPreprocessor.from_preset(
            MINILM_DIR, sequence_length=64)(list(sst2_sentences())))
        model = BertBackbone.from_preset(MINILM_DIR)

        def embed():
            sequence = to_numpy(model(inputs)["sequence_output"])
            mask = inputs["padding_mask"][..., None]
            return (sequence * mask).sum(1) / mask.sum(1)

        expected = embed()
        model.quantize("int8")
        self.assertGreater(_cosines(embed(), expected).min(), 0.98)

    def test_huggingface_export_is_refused_naming_the_layers(self):
        from keras_bert.checkpoints import export_to_huggingface

        model = BertBackbone(**TINY)
        model.quantize("int8")
        target = os.path.join(self.get_temp_dir(), "hf")
        with self.assertRaisesRegex(
                ValueError, r"quantized \(9 layers in int8, e\.g\. "
                r"transformer_layer_0/.*before `quantize\(\)`"):
            export_to_huggingface(model, target)
        self.assertFalse(os.path.exists(target))

    @skip_unless_backend("tensorflow")
    def test_tensorflow_runs_a_quantized_model_under_xla(self):
        # Keras leaves XLA off on a CPU-only TensorFlow, where int8
        # matmuls run about 10x slower without it.
        model = BertClassifier(BertBackbone(**TINY), num_classes=2,
                               dropout=0.0)
        float_jit = model.jit_compile
        model.quantize("int8")
        self.assertTrue(model.jit_compile)
        self.assertTrue(model.backbone.jit_compile)
        restored = self.run_model_saving_test(model, packed_inputs(), atol=0)
        self.assertTrue(restored.jit_compile)
        # A float model keeps Keras' choice.
        self.assertEqual(BertClassifier(BertBackbone(**TINY), num_classes=2)
                         .jit_compile, float_jit)

    @skip_unless_backend("tensorflow")
    def test_every_gemm_stays_int8_when_the_length_is_unknown(self):
        # A SavedModel's signature leaves batch and length unknown; Keras'
        # int8 einsum on TensorFlow then multiplied the QKV projection in
        # float in every layer (25% slower served than in-process).
        import re

        import tensorflow as tf

        backbone = BertBackbone(**TINY)
        backbone.quantize("int8")
        spec = tf.TensorSpec((None, None), tf.int32)
        serve = tf.function(
            lambda x: backbone(x, training=False), jit_compile=True,
            input_signature=[{name: spec for name in packed_inputs()}])
        hlo = serve.experimental_get_compiler_ir(
            {k: tf.constant(v) for k, v in packed_inputs().items()})(stage="hlo")
        dots = re.findall(r"= (\w+)\[[\d,]*\]\S* dot\(", hlo)
        layers = TINY["num_layers"]
        # int8 x int8 -> int32: QKV, attention output, 2 feed-forward per
        # layer and the pooler; the two attention products stay float.
        self.assertEqual(dots.count("s32"), 4 * layers + 1, dots)
        self.assertEqual(dots.count("f32"), 2 * layers, dots)

    @skip_unless_backend("torch")
    def test_torch_cpu_runs_every_int8_gemm_as_an_integer_gemm(self):
        # Keras casts int8 products to int32 off CUDA (0.07x float32 on
        # MiniLM), clips activations with tensor bounds and wraps each
        # product in an autograd.Function; a quantized backbone sends them
        # to torch._int_mm and a fused quantizer, without the Function
        # when gradients are off, with the same results.
        from unittest import mock

        import torch
        from keras.src.backend.torch import core
        from keras.src.backend.torch import numpy as torch_numpy
        from keras.src.quantizers import quantizers

        from keras_bert import torch_int8

        model = BertBackbone(**TINY)
        model.quantize("int8")
        inputs = packed_inputs()
        # QKV (einsum), attention output, 2 feed-forward per layer, pooler.
        gemms = 4 * TINY["num_layers"] + 1
        fast = {}
        # Both ways of multiplying, whichever this CPU takes by default.
        for has_dot_products in (True, False):
            with mock.patch.object(torch_int8, "_int_mm_is_fast",
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
        keras_path = mock.patch.multiple(
            torch_numpy, matmul=torch_numpy.matmul.__wrapped__,
            einsum=torch_numpy.einsum.__wrapped__,
            transpose=torch_numpy.transpose.__wrapped__)
        keras_quantize = mock.patch.object(
            quantizers, "abs_max_quantize",
            quantizers.abs_max_quantize.__wrapped__)
        keras_function = mock.patch.object(
            core.custom_gradient, "__call__",
            core.custom_gradient.__call__.__wrapped__)
        with keras_path, keras_quantize, keras_function:
            slow = to_numpy(model.predict_on_batch(inputs))
            # A model built quantized (a reload) takes the same path.
            BertBackbone.from_config(model.get_config())
            self.assertTrue(getattr(torch_numpy.matmul, "fast_torch_int8",
                                    False))
            self.assertTrue(hasattr(quantizers.abs_max_quantize,
                                    "__wrapped__"))
        self.assertAllClose(fast[True], slow, atol=0, rtol=0)
        self.assertAllClose(fast[False], slow, atol=0, rtol=0)

    @skip_unless_backend("torch")
    def test_torch_compiles_a_quantized_backbone_as_one_graph(self):
        # Keras' autograd.Function and a tracked list of axes cut a
        # compiled int8 MiniLM into 22-37 graphs.
        import torch

        model = BertBackbone(**TINY)
        model.quantize("int8")
        inputs = {k: torch.as_tensor(v) for k, v in packed_inputs().items()}
        with torch.no_grad():
            explanation = torch._dynamo.explain(
                lambda x: model(x, training=False)["sequence_output"]
            )(inputs)
        self.assertEqual(explanation.graph_break_count, 0,
                         [r.reason for r in explanation.break_reasons])
        self.assertEqual(explanation.graph_count, 1)


    def test_quantize_collects_garbage_once(self):
        # Keras collects after every dropped float kernel: 8 of the 8.2 s
        # quantize("int8") took on MiniLM.
        import gc
        from unittest import mock

        model = BertBackbone(**TINY)
        collect = gc.collect
        with mock.patch.object(gc, "collect", wraps=gc.collect) as counted:
            model.quantize("int8")
        self.assertEqual(counted.call_count, 1)
        self.assertIs(gc.collect, collect)
        self.assertEqual(model.pooler.quantization_mode, "int8")


class IntegerGemmTest(TestCase):

    def test_only_last_axis_contractions_become_gemms(self):
        from keras_bert.torch_int8 import _is_last_axis_contraction

        for equation in ("bld,dkh->blkh", "ab,bc->ac", "abc,cd->abd",
                         "a,ab->b"):
            self.assertTrue(_is_last_axis_contraction(equation), equation)
        for equation in ("bld,dkh->bklh", "ab,cb->ac", "ab,bc->ca",
                         "...d,dk->...k", "ab,bc", "abb,bc->abc",
                         "ab,bc,cd->ad", "ab,ba->"):
            self.assertFalse(_is_last_axis_contraction(equation), equation)

    @skip_unless_backend("torch")
    def test_int8_products_equal_keras_own(self):
        from keras.src.backend.torch import numpy as torch_numpy

        from keras_bert.torch_int8 import use_fast_torch_int8

        use_fast_torch_int8()
        rng = np.random.default_rng(0)
        x = rng.integers(-127, 128, (2, 5, 12)).astype("int8")
        kernel = rng.integers(-127, 128, (12, 3, 4)).astype("int8")
        expected = np.einsum("bld,dkh->blkh", x.astype("int64"),
                             kernel.astype("int64"))
        for actual in (
                keras.ops.einsum("bld,dkh->blkh", x, kernel),
                keras.ops.reshape(keras.ops.matmul(
                    x, kernel.reshape(12, 12)), (2, 5, 3, 4)),
                torch_numpy.matmul.__wrapped__(x, kernel.reshape(12, 12))
                .reshape(2, 5, 3, 4)):
            self.assertEqual(keras.backend.standardize_dtype(actual.dtype),
                             "int32")
            np.testing.assert_array_equal(to_numpy(actual), expected)
        # Float products are Keras' own.
        floats = keras.ops.matmul(x.astype("float32"),
                                  kernel.reshape(12, 12).astype("float32"))
        self.assertEqual(keras.backend.standardize_dtype(floats.dtype),
                         "float32")

    @skip_unless_backend("torch")
    def test_float32_gemms_give_the_exact_int32_product(self):
        import torch

        from keras_bert import torch_int8

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
        from unittest import mock

        from keras_bert import torch_int8

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

        from keras_bert.torch_int8 import use_fast_torch_int8

        use_fast_torch_int8()
        fused = quantizers.abs_max_quantize
        keras_own = fused.__wrapped__
        rng = np.random.default_rng(0)
        for shape, axis in (((64, 384), -1), ((2, 9, 48), -1),
                            ((2, 9, 48), (1, 2)), ((5, 1), 0)):
            for magnitude in (1e-4, 1.0, 300.0):
                x = (rng.standard_normal(shape) * magnitude).astype("float32")
                x[0] = 0  # an all-zero token: scale 127 / epsilon
                x.flat[1] = magnitude * 40  # one outlier per tensor
                for value_range in ((-127, 127), (-63, 63)):
                    ours = fused(x, axis, value_range)
                    theirs = keras_own(x, axis, value_range)
                    for a, b in zip(ours, theirs):
                        self.assertEqual(str(a.dtype), str(b.dtype))
                        np.testing.assert_array_equal(to_numpy(a),
                                                      to_numpy(b))
        # Other dtypes and the NumPy path are Keras' own.
        x = rng.standard_normal((4, 8)).astype("float32")
        for kwargs in ({"dtype": "int16", "value_range": (-300, 300)},
                       {"to_numpy": True}):
            np.testing.assert_array_equal(
                to_numpy(fused(x, -1, **kwargs)[0]),
                to_numpy(keras_own(x, -1, **kwargs)[0]))

    @skip_unless_backend("torch")
    def test_custom_gradients_skip_autograd_only_without_gradients(self):
        from unittest import mock

        import torch
        from keras.src.backend.torch import core

        from keras_bert.torch_int8 import use_fast_torch_int8

        use_fast_torch_int8()

        @keras.ops.custom_gradient
        def double(x):
            def grad(*args, upstream=None):
                if upstream is None:
                    (upstream,) = args
                return upstream * 5.0
            return x * 2.0, grad

        x = torch.ones(3, requires_grad=True)
        with mock.patch.object(core.CustomGradientFunction, "apply",
                               wraps=core.CustomGradientFunction.apply
                               ) as autograd_function:
            with torch.no_grad():
                np.testing.assert_array_equal(to_numpy(double(x)), 2.0)
            self.assertEqual(autograd_function.call_count, 0)
            double(x).sum().backward()
            self.assertEqual(autograd_function.call_count, 1)
        np.testing.assert_array_equal(to_numpy(x.grad), 5.0)
