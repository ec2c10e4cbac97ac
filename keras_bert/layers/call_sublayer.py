"""A sub-layer's call without Keras' per-call work, where it does nothing."""

import keras
from keras.src.backend import get_autocast_scope
from keras.src.backend import is_float_dtype


def call_sublayer(layer, inputs, **kwargs):
    """`layer(inputs, **kwargs)` from inside a parent layer's `call`.

    On PyTorch nothing compiles an eager forward, so each `Layer.__call__`
    pays its Python every time (input conversion, argument binding, the
    training flag, dtype and name scopes, checks): about 0.09 ms, 43 times
    a forward of a 6-layer encoder's sub-layers. Inside a parent's `call`
    that work is already done for a built sub-layer whose floating inputs
    have its compute dtype and whose training flag the parent passes on:
    this calls what `__call__` would end in directly then (`layer.call`,
    or `layer.quantized_call` for a quantized layer), and
    `layer(inputs, **kwargs)` whenever `__call__` would do something more:
    cast an input, change the autocast scope (a mixed-precision sub-layer,
    or one with `autocast=False` such as `LayerNormalization` under a mixed
    policy), rematerialize, record an activity regularizer, or build. The
    result is the same tensor (tests/layers/test_call_sublayer.py compares
    them bit for bit). all-MiniLM-L6-v2's float32 eager forward of one
    sentence ran 1.27x faster at 8 tokens and 1.10x at 128
    (docs/performance.md, "Sub-layers called without Keras' `__call__`").
    Under JAX and TensorFlow the call is traced once per compiled program,
    so it always goes through `__call__` there.

    Args:
        layer: a built `keras.layers.Layer`.
        inputs: tensor, the first argument of `layer.call`.
        **kwargs: its other arguments (masks, `training`, flags), passed
            by name.

    Returns:
        What `layer(inputs, **kwargs)` returns.

    Example:

    >>> dense = keras.layers.Dense(4)
    >>> dense.build((2, 3))
    >>> tuple(call_sublayer(dense, keras.ops.ones((2, 3))).shape)
    (2, 4)
    """
    if _call_adds_nothing(layer, inputs, kwargs):
        # What `Operation.__call__` dispatches to, past Keras' checks.
        call = (layer.call if layer.quantization_mode is None
                else layer.quantized_call)
        return call(inputs, **kwargs)
    return layer(inputs, **kwargs)


def _call_adds_nothing(layer, inputs, kwargs):
    if (keras.config.backend() != "torch"
            or not layer.built
            or getattr(layer, "_remat_mode", None) is not None
            or layer.activity_regularizer is not None
            or not keras.ops.is_tensor(inputs)
            or not all(_needs_no_cast(layer, x)
                       for x in (inputs, *kwargs.values()))):
        return False
    # The rule `Layer.__call__` follows to enter a new autocast scope.
    scope = get_autocast_scope()
    if scope is None:
        return layer.compute_dtype == layer.variable_dtype
    return (layer.autocast and is_float_dtype(layer.compute_dtype)
            and scope.dtype == layer.compute_dtype)


def _needs_no_cast(layer, value):
    # `__call__` casts floating tensors to the input dtype; masks, flags
    # and None pass as they are.
    if not keras.ops.is_tensor(value):
        return value is None or isinstance(value, (bool, int, float, str))
    dtype = keras.backend.standardize_dtype(value.dtype)
    return dtype == layer.input_dtype or not is_float_dtype(dtype)
