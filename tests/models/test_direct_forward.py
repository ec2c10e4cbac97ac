"""The backbone's forward on PyTorch without the walk of its Functional
graph (`keras_bert/models/encoder_stack.py`, `direct_forward`): taken
where it applies, and the same outputs as the walk, bit for bit, for
every way a backbone is built and run."""

from unittest import mock

import keras
import numpy as np

from keras_bert import BertBackbone
from keras_bert.models import bert_backbone
from keras_bert.models import encoder_stack
from tests.models.test_bert_backbone import TINY
from tests.models.test_bert_backbone import _inputs
from tests.test_case import TestCase
from tests.test_case import skip_unless_backend
from tests.test_case import to_numpy


def walked(model, inputs, **kwargs):
    """`model(inputs)` through Keras' walk of the Functional graph."""
    with mock.patch.object(bert_backbone, "runs_direct_forward",
                           lambda *_: False):
        return model(inputs, **kwargs)


def counting_direct_forward():
    return mock.patch.object(bert_backbone, "direct_forward",
                             wraps=encoder_stack.direct_forward)


class DirectForwardTest(TestCase):
    def assert_same_outputs(self, ours, walk):
        self.assertEqual(sorted(ours), sorted(walk))
        for key in walk:
            for a, b in zip(keras.tree.flatten(ours[key]),
                            keras.tree.flatten(walk[key])):
                np.testing.assert_array_equal(to_numpy(a), to_numpy(b))

    def test_taken_on_pytorch_only(self):
        model = BertBackbone(**TINY)
        inputs = _inputs()
        with counting_direct_forward() as direct:
            model(inputs)
            model.predict_on_batch(inputs)
            tensors = {k: keras.ops.convert_to_tensor(v)
                       for k, v in inputs.items()}
            model(tensors)
        expected = 3 if keras.config.backend() == "torch" else 0
        self.assertEqual(direct.call_count, expected)

    def test_other_inputs_take_the_walk(self):
        self.assertFalse(encoder_stack.runs_direct_forward(
            {"token_ids": np.zeros((2, 3))}, None, {}))
        inputs = _inputs()
        self.assertFalse(encoder_stack.runs_direct_forward(
            inputs, {"token_ids": np.ones((2, 7), bool)}, {}))
        self.assertFalse(encoder_stack.runs_direct_forward(
            {k: v[0] for k, v in inputs.items()}, None, {}))
        self.assertFalse(encoder_stack.runs_direct_forward(
            {k: keras.KerasTensor(v.shape, "int32")
             for k, v in inputs.items()}, None, {}))
        self.assertEqual(
            encoder_stack.runs_direct_forward(inputs, None, {}),
            keras.config.backend() == "torch")

    @skip_unless_backend("torch")  # elsewhere the walk is the only path
    def test_same_outputs_as_the_walk(self):
        inputs = _inputs()
        cases = {
            "float32": BertBackbone(**TINY),
            "hidden states and attentions": BertBackbone(
                **TINY, output_hidden_states=True, output_attentions=True),
            "pre-norm": BertBackbone(**TINY, normalize_first=True),
            "mixed_bfloat16": BertBackbone(**TINY, dtype="mixed_bfloat16"),
        }
        lora = BertBackbone(**TINY)
        lora.enable_lora(2)
        cases["LoRA"] = lora
        quantized = BertBackbone(**TINY)
        quantized.quantize("int8")
        cases["int8"] = quantized
        for name, model in cases.items():
            with self.subTest(name):
                self.assert_same_outputs(model(inputs), walked(model, inputs))
                self.assert_same_outputs(
                    model.predict_on_batch(inputs),
                    keras.tree.map_structure(to_numpy,
                                             walked(model, inputs)))

    @skip_unless_backend("torch")
    def test_blocks_get_no_mask_when_no_token_is_padded(self):
        model = BertBackbone(**TINY)
        unpadded = _inputs(pad_from=7)
        masks = []
        block_call = model.transformer_layers[0].call

        def spy(x, padding_mask=None, **kwargs):
            masks.append(padding_mask)
            return block_call(x, padding_mask=padding_mask, **kwargs)

        with mock.patch.object(model.transformer_layers[0], "call", spy):
            for inputs in (unpadded, _inputs()):
                for training in (False, True):
                    model(inputs, training=training)
        self.assertEqual([m is None for m in masks],
                         [True, True, False, False])
        # A mask of ones changes no attention weight.
        self.assertAllClose(model(unpadded)["sequence_output"],
                            walked(model, unpadded)["sequence_output"],
                            atol=1e-6)

    @skip_unless_backend("torch")
    def test_training_reaches_dropout(self):
        model = BertBackbone(**{**TINY, "dropout": 0.5})
        inputs = _inputs()
        self.assert_same_outputs(model(inputs, training=False),
                                 walked(model, inputs, training=False))
        dropped = to_numpy(model(inputs, training=True)["sequence_output"])
        kept = to_numpy(model(inputs, training=False)["sequence_output"])
        self.assertFalse(np.allclose(dropped, kept))
