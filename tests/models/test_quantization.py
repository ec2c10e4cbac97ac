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
