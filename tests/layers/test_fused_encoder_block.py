"""On PyTorch, inference runs each encoder block in PyTorch's fused kernel
(`fused_ops.encoder_block`) where that kernel applies, with the layers'
results; everywhere else the block's layers run. Speed is measured in
bench/, never here."""

from unittest import mock

import keras
import numpy as np

from keras_bert import BertBackbone
from keras_bert import fused_ops
from keras_bert._compat import torch_ops
from keras_bert.layers import TransformerEncoderBlock
from tests import numpy_bert
from tests.test_case import TestCase
from tests.test_case import backend
from tests.test_case import skip_unless_backend
from tests.test_case import to_numpy

KWARGS = dict(num_heads=2, hidden_dim=8, intermediate_dim=16, dropout=0.1)


def _block(seed=0, **kwargs):
    block = TransformerEncoderBlock(**{**KWARGS, **kwargs})
    block.build((2, 6, 8))
    # Random biases and LayerNorm parameters too, so that a weight the
    # kernel took from the wrong place shows.
    rng = np.random.default_rng(seed)
    block.set_weights([rng.normal(scale=0.3, size=w.shape).astype("float32")
                       for w in block.get_weights()])
    return block


def _inputs(seed=1):
    return np.random.default_rng(seed).normal(size=(2, 6, 8)).astype(
        "float32")


class FusedEncoderBlockTest(TestCase):
    def _spy(self):
        return mock.patch.object(torch_ops, "encoder_layer",
                                 wraps=torch_ops.encoder_layer)

    def _layers_only(self, block, x, **kwargs):
        import torch

        with mock.patch.object(torch_ops, "encoder_layer_works",
                               return_value=False), torch.no_grad():
            return to_numpy(block(x, **kwargs))

    @skip_unless_backend("torch")
    def test_inference_is_one_kernel_call_with_the_layers_results(self):
        import torch

        x, mask = _inputs(), np.ones((2, 6), "int32")
        for normalize_first, activation in ((False, "gelu"), (True, "gelu"),
                                            (False, "relu")):
            with self.subTest(normalize_first=normalize_first,
                              activation=activation):
                block = _block(normalize_first=normalize_first,
                               activation=activation)
                expected = self._layers_only(block, x, padding_mask=mask)
                with self._spy() as spy, torch.no_grad():
                    fused = to_numpy(block(x, padding_mask=mask))
                    unmasked = to_numpy(block(x))
                self.assertEqual(spy.call_count, 2)
                self.assertAllClose(fused, expected, atol=1e-5)
                self.assertAllClose(unmasked, expected, atol=1e-5)
                if activation == "gelu":
                    self.assertAllClose(fused, numpy_bert.encoder_block(
                        block, x.astype("float64"), mask), atol=1e-5)

    @skip_unless_backend("torch")
    def test_layers_run_where_the_kernel_does_not_apply(self):
        import torch

        x, ones = _inputs(), np.ones((2, 6), "int32")
        padded = ones.copy()
        padded[0, 4:] = 0
        lora = _block()
        lora.intermediate_dense.enable_lora(2)
        quantized = _block()
        quantized.attention.output_dense.quantize("int8")
        long_rows = x[:, :1].repeat(fused_ops.FUSED_BLOCK_MAX_LENGTH + 1,
                                    axis=1)
        cases = {
            "a padded token": (_block(), x, {"padding_mask": padded}),
            "training": (_block(), x, {"training": True}),
            "attention scores": (_block(), x,
                                 {"return_attention_scores": True}),
            "a block mask": (_block(), x, {"attention_mask": np.ones(
                (2, 6, 6), bool)}),
            "rows past FUSED_BLOCK_MAX_LENGTH": (_block(), long_rows, {}),
            "tanh GELU": (_block(activation="gelu_approximate"), x, {}),
            "bfloat16": (_block(dtype="bfloat16"), x, {}),
            "mixed precision": (_block(dtype="mixed_bfloat16"), x, {}),
            "LoRA": (lora, x, {}),
            "int8": (quantized, x, {}),
        }
        for name, (block, rows, kwargs) in cases.items():
            with self.subTest(name):
                with self._spy() as spy, torch.no_grad():
                    block(rows, **kwargs)
                self.assertEqual(spy.call_count, 0)
        with self._spy() as spy:
            _block()(x, padding_mask=ones)  # gradients on: training's path
        self.assertEqual(spy.call_count, 0)

    @skip_unless_backend("torch")
    def test_backbone_predicts_unpadded_rows_through_the_kernel(self):
        backbone = BertBackbone(vocabulary_size=30, num_layers=3, num_heads=2,
                                hidden_dim=8, intermediate_dim=16,
                                max_sequence_length=8)
        rng = np.random.default_rng(0)
        inputs = {"token_ids": rng.integers(0, 30, (2, 8)).astype("int32"),
                  "segment_ids": np.zeros((2, 8), "int32"),
                  "padding_mask": np.ones((2, 8), "int32")}
        with mock.patch.object(torch_ops, "encoder_layer_works",
                               return_value=False):
            expected = backbone.predict_on_batch(inputs)
        with self._spy() as spy:
            outputs = backbone.predict_on_batch(inputs)
        self.assertEqual(spy.call_count, 3)
        for key in ("sequence_output", "pooled_output"):
            self.assertAllClose(outputs[key], expected[key], atol=1e-5)

    def test_other_backends_run_the_layers(self):
        if backend() == "torch":
            self.skipTest("the kernel is PyTorch's")
        block = _block()
        x = _inputs()
        self.assertIsNone(fused_ops.encoder_block(
            keras.ops.convert_to_tensor(x), None,
            [w.value for w in block.weights], 2, "gelu", False, 1e-12))
