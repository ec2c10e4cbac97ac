"""A sub-layer's call without Keras' per-call work, where it does nothing.

On PyTorch nothing compiles an eager forward, so every `Layer.__call__`
runs its Python each time: input conversion, argument binding, the
training flag, dtype and name scopes, input checks. Inside a parent
layer's call that work is already done for a built sub-layer whose
floating inputs have its compute dtype, whose autocast scope is already
the right one and whose arguments the parent passes by name; the
sub-layer's own `call` (or `quantized_call`, for a quantized layer) then
gives the same tensor. docs/performance.md ("Sub-layers called without
Keras' `__call__`") has what that saves on a one-sentence forward.

The rule below is `Layer.__call__`'s, read from Keras' private modules
(the call context, the autocast scope, the rematerialization mode, the
Keras mask), checked on Keras 3.13.0 (the floor) and 3.15.1 (present
since 3.10.0). Fallback, where any of them is gone: every call goes
through `Layer.__call__`.
"""

import functools

import keras

try:
    from keras.src.backend import get_autocast_scope
    from keras.src.backend import get_keras_mask
    from keras.src.backend import is_float_dtype
    from keras.src.backend.common import global_state
except ImportError:  # a Keras without them: always Keras' call
    global_state = None


def _current_call_context():
    return global_state.get_global_attribute("current_call_ctx")


class DirectSublayerCall:
    """Mixin for a keras_bert layer: called from inside another layer's
    call on PyTorch, it runs its own `call` when Keras' `__call__` would
    add nothing; otherwise, and on every other backend (which trace the
    call once per compiled program), it is Keras' call.

    Put it before the Keras class: `class FusedDense(DirectSublayerCall,
    keras.layers.Dense)`.
    """

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and call_adds_nothing(self, args[0], kwargs):
            return _own_call(self)(args[0], **kwargs)
        return super().__call__(*args, **kwargs)


def call_sublayer(layer, inputs, **kwargs):
    """`layer(inputs, **kwargs)` from inside a parent layer's `call`, by
    the rule of `DirectSublayerCall`, for any Keras layer.

    Args:
        layer: a `keras.layers.Layer`.
        inputs: tensor, the first argument of `layer.call`.
        **kwargs: its other arguments (masks, `training`, flags), by name.

    Returns:
        What `layer(inputs, **kwargs)` returns.

    Example:
    >>> dense = keras.layers.Dense(4)
    >>> dense.build((2, 3))
    >>> tuple(call_sublayer(dense, keras.ops.ones((2, 3))).shape)
    (2, 4)
    """
    if call_adds_nothing(layer, inputs, kwargs):
        return _own_call(layer)(inputs, **kwargs)
    return layer(inputs, **kwargs)


def _own_call(layer):
    # What `Operation.__call__` dispatches to, past Keras' checks.
    return (layer.call if layer.quantization_mode is None
            else layer.quantized_call)


def call_adds_nothing(layer, inputs, kwargs):
    """Whether `layer(inputs, **kwargs)` would only end in `layer.call`."""
    if (global_state is None
            or keras.config.backend() != "torch"
            or _current_call_context() is None  # a top-level call
            or not layer.built
            or getattr(layer, "_remat_mode", None) is not None
            or layer.activity_regularizer is not None
            or not keras.ops.is_tensor(inputs)
            or get_keras_mask(inputs) is not None):
        return False
    input_dtype = layer.input_dtype
    for value in (inputs, *kwargs.values()):
        if not _needs_no_cast(input_dtype, value):
            return False
    # The rule `Layer.__call__` follows to enter a new autocast scope.
    scope = get_autocast_scope()
    if scope is None:
        return layer.compute_dtype == layer.variable_dtype
    return (layer.autocast and is_float_dtype(layer.compute_dtype)
            and scope.dtype == layer.compute_dtype)


def _needs_no_cast(input_dtype, value):
    # `__call__` casts floating tensors to the input dtype; masks, flags
    # and None pass as they are.
    if not keras.ops.is_tensor(value):
        return value is None or isinstance(value, (bool, int, float, str))
    return _float_dtype_name(value.dtype) in (None, input_dtype)


@functools.cache
def _float_dtype_name(dtype):
    # Keras' name of a floating tensor dtype, None for other dtypes: asked
    # for every argument of every sub-layer call, and there are few dtypes.
    name = keras.backend.standardize_dtype(dtype)
    return name if is_float_dtype(name) else None
