"""keras_bert's layers, called as `self.output_dense(x)` inside a parent's
call, skip `Layer.__call__` on PyTorch only where that call would do
nothing (`DirectSublayerCall`), and give the same tensors bit for bit;
`call_sublayer` applies the same rule to any Keras layer. Speed is
measured in bench/, never here."""

import contextlib
from unittest import mock

import keras
import numpy as np

from keras_bert import BertBackbone
from keras_bert._compat import sublayer_call
from keras_bert.layers import TransformerEncoderBlock
from keras_bert.layers.call_sublayer import call_sublayer
from keras_bert.layers.fused_dense import FusedDense
from tests.test_case import TestCase
from tests.test_case import backend
from tests.test_case import skip_unless_backend
from tests.models.tiny_models import TINY
from tests.models.tiny_models import packed_inputs
from tests.test_case import to_numpy


def _dunder_calls(fn):
    """Runs `fn()`, returns the layers whose `__call__` ran, in order."""
    called = []
    original = keras.layers.Layer.__call__

    def spy(self, *args, **kwargs):
        called.append(self)
        return original(self, *args, **kwargs)

    with mock.patch.object(keras.layers.Layer, "__call__", spy):
        fn()
    return called


class _Inside(keras.layers.Layer):
    """Runs `fn()` inside its own call, as a parent layer's call does."""

    def __init__(self, fn, **kwargs):
        super().__init__(**kwargs)
        self.fn = fn

    def call(self, inputs):
        self.fn()
        return inputs


def _in_parent(fn):
    """`fn()`, run inside a layer's call; returns what it returned."""
    results = []
    _Inside(lambda: results.append(fn()))(keras.ops.ones((1,)))
    return results[0]


def _always_dunder():
    return mock.patch.object(sublayer_call, "call_adds_nothing",
                             lambda layer, inputs, kwargs: False)


def _built_dense(dtype=None):
    dense = keras.layers.Dense(4, bias_initializer="random_normal",
                               dtype=dtype)
    dense.build((2, 3))
    return dense


class _Parent(keras.layers.Layer):
    """Calls `child` through `call_sublayer`, noting Keras' calls."""

    def __init__(self, child, **kwargs):
        super().__init__(**kwargs)
        self.child = child
        self.dunder_calls = None

    def call(self, inputs):
        self.dunder_calls = _dunder_calls(
            lambda: call_sublayer(self.child, inputs))
        return inputs


class _FusedParent(keras.layers.Layer):
    """Calls a `FusedDense` as Keras code does, noting Keras' calls."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = FusedDense(4)
        self.dunder_calls = None

    def build(self, inputs_shape):
        self.dense.build(inputs_shape)

    def call(self, inputs):
        self.dunder_calls = _dunder_calls(lambda: self.dense(inputs))
        return inputs


class CallSublayerTest(TestCase):
    def test_encoder_sublayers_skip_dunder_call_only_on_torch(self):
        model = BertBackbone(**TINY)
        blocks = [layer for layer in model.layers
                  if isinstance(layer, TransformerEncoderBlock)]
        sublayers = {id(layer) for block in blocks for layer in (
            block.attention, block.attention.query_key_value,
            block.attention.output_dense, block.attention_layer_norm,
            block.intermediate_dense, block.output_dense,
            block.output_layer_norm)}
        sublayers |= {id(model.embeddings.token_embedding),
                      id(model.embeddings.segment_embedding)}
        called = _dunder_calls(lambda: model(packed_inputs()))
        through_dunder = [layer for layer in called
                          if id(layer) in sublayers]
        if backend() == "torch":
            self.assertEqual(through_dunder, [])
        else:
            self.assertEqual(len(through_dunder), len(sublayers))
        # The blocks are Keras calls where the backbone walks its graph;
        # on PyTorch its direct forward calls them by the same rule
        # (models/encoder_stack.py), with the training flag it resolved.
        self.assertEqual(sum(layer in blocks for layer in called),
                         0 if backend() == "torch" else 2)

    def test_same_outputs_bit_for_bit_in_each_precision(self):
        for dtype in ("float32", "bfloat16", "mixed_bfloat16", "int8"):
            model = BertBackbone(
                **TINY, dtype="float32" if dtype == "int8" else dtype)
            if dtype == "int8":
                model.quantize("int8")
            inputs = packed_inputs()
            direct = to_numpy(model(inputs)["sequence_output"])
            with _always_dunder():
                keras_call = to_numpy(model(inputs)["sequence_output"])
            np.testing.assert_array_equal(direct, keras_call, err_msg=dtype)

    def test_same_training_step(self):
        weights, losses = [], []
        for use_dunder in (False, True):
            keras.utils.set_random_seed(1)
            model = BertBackbone(**TINY)
            outputs = model.output["pooled_output"]
            head = keras.Model(model.input,
                               keras.layers.Dense(1)(outputs))
            head.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
            context = (_always_dunder() if use_dunder
                       else contextlib.nullcontext())
            with context:
                losses.append(head.train_on_batch(
                    packed_inputs(), np.ones((3, 1), "float32")))
            weights.append(head.get_weights())
        self.assertEqual(losses[0], losses[1])
        for direct, keras_call in zip(*weights):
            np.testing.assert_array_equal(direct, keras_call)

    @skip_unless_backend("torch")
    def test_a_keras_bert_layer_called_as_keras_code_calls_it(self):
        parent = _FusedParent()
        parent(keras.ops.ones((2, 3)))
        self.assertEqual(parent.dunder_calls, [])
        # Outside any parent's call it is Keras' call.
        dense = parent.dense
        self.assertEqual(
            _dunder_calls(lambda: dense(keras.ops.ones((2, 3)))), [dense])

    @skip_unless_backend("torch")
    def test_takes_call_directly_for_a_plain_layer(self):
        dense = _built_dense()
        x = keras.ops.ones((2, 3))
        with mock.patch.object(dense, "call", wraps=dense.call) as call:
            self.assertEqual(_in_parent(lambda: _dunder_calls(
                lambda: call_sublayer(dense, x))), [])
        call.assert_called_once()
        self.assertAllClose(call_sublayer(dense, x), dense(x))

    @skip_unless_backend("torch")
    def test_takes_quantized_call_directly_for_a_quantized_layer(self):
        dense = _built_dense()
        dense.quantize("int8")
        x = keras.ops.convert_to_tensor(
            np.random.default_rng(5).normal(size=(2, 3)).astype("float32"))
        with mock.patch.object(dense, "quantized_call",
                               wraps=dense.quantized_call) as call:
            self.assertEqual(_in_parent(lambda: _dunder_calls(
                lambda: call_sublayer(dense, x))), [])
        call.assert_called_once()
        np.testing.assert_array_equal(
            to_numpy(_in_parent(lambda: call_sublayer(dense, x))),
            to_numpy(dense(x)))

    @skip_unless_backend("torch")
    def test_goes_through_dunder_call_where_it_does_something(self):
        x = keras.ops.ones((2, 3))
        unbuilt = keras.layers.Dense(4)
        mixed = _built_dense(dtype="mixed_bfloat16")
        cases = (
            ("not built", unbuilt, x, {}),
            ("input to cast", _built_dense(),
             keras.ops.cast(x, "bfloat16"), {}),
            ("float keyword to cast", _built_dense(), x,
             {"training": keras.ops.ones((1,), "float16")}),
            ("mixed precision", mixed, x, {}),
        )
        for name, layer, inputs, kwargs in cases:
            with self.subTest(name):
                called = _in_parent(lambda: _dunder_calls(
                    lambda: call_sublayer(layer, inputs, **kwargs)))
                self.assertEqual(called, [layer])

    @skip_unless_backend("torch")
    def test_keeps_keras_autocast_rule_under_a_mixed_parent(self):
        # Inside a mixed-precision parent's bfloat16 scope, a mixed Dense
        # reads its kernel in bfloat16 either way: called directly. A
        # LayerNormalization (`autocast=False`) must read its float32
        # scale, which only Keras' call arranges.
        dense = _built_dense(dtype="mixed_bfloat16")
        layer_norm = keras.layers.LayerNormalization(dtype="mixed_bfloat16")
        layer_norm.build((2, 3))
        for child, expected in ((dense, []), (layer_norm, [layer_norm])):
            parent = _Parent(child, dtype="mixed_bfloat16")
            parent(keras.ops.ones((2, 3)))
            self.assertEqual(parent.dunder_calls, expected)

    def test_result_equals_layer_call_on_every_backend(self):
        dense = _built_dense()
        x = np.random.default_rng(3).normal(size=(2, 3)).astype("float32")
        x = keras.ops.convert_to_tensor(x)
        np.testing.assert_array_equal(
            to_numpy(_in_parent(lambda: call_sublayer(dense, x))),
            to_numpy(dense(x)))
