"""The fused query/key/value projection of `MultiHeadSelfAttention`.

Its kernel is `(hidden, 3, hidden)` and its bias `(3, hidden)`: q, k and v
side by side on their own axis, so a split of the last axis over devices
gives each device whole heads of all three (docs/distributed.md). It is the
same GEMM as a `Dense` with a `(hidden, 3 * hidden)` kernel, which is what
it was before: files written then hold the same numbers in the same order,
one reshape apart, and their weights still load (an optimizer state saved
with them, in a compiled `.keras` file or a pretraining checkpoint, does
not: 0.1.0 is unreleased, so that format had no users).
"""

import keras
import numpy as np

from keras_bert import fused_ops
from keras_bert._compat.sublayer_call import DirectSublayerCall


@keras.saving.register_keras_serializable(package="keras_bert")
class FusedQueryKeyValue(DirectSublayerCall, keras.layers.EinsumDense):
    """`(batch, length, hidden)` -> `(batch, length, 3, hidden)`: q, k, v.

    Args:
        hidden_dim: int. Width of each of q, k and v.
        **kwargs: passed to `keras.layers.EinsumDense` (initializers,
            dtype, name).

    Example:
    >>> import numpy as np
    >>> layer = FusedQueryKeyValue(hidden_dim=8)
    >>> tuple(layer(np.zeros((2, 5, 8), "float32")).shape)
    (2, 5, 3, 8)
    >>> tuple(layer.kernel.shape), tuple(layer.bias.shape)
    ((8, 3, 8), (3, 8))
    """

    def __init__(self, hidden_dim, **kwargs):
        super().__init__(
            "bld,dkh->blkh",
            output_shape=(None, 3, hidden_dim),
            bias_axes="kh",
            **kwargs,
        )
        self.hidden_dim = hidden_dim

    def call(self, inputs, training=None):
        if keras.config.backend() != "torch":
            return super().call(inputs, training=training)
        # The einsum is a GEMM against the kernel seen as (hidden, 3 *
        # hidden); on PyTorch that GEMM can take the bias in the same
        # kernel (`fused_ops.dense`) where Keras adds it in a second pass.
        return fused_ops.dense(inputs, self.kernel, self.bias)

    def quantize(self, mode=None, type_check=True, config=None):
        # Keras quantizes only exact `EinsumDense`s unless told the subclass
        # is one: this layer adds no math, so Keras' int8 path is exact.
        super().quantize(mode, type_check=False, config=config)

    def load_own_variables(self, store):
        store = {key: store[key] for key in store.keys()}
        # Keras stores the kernel first, then the bias.
        for key, shape in (("0", self.kernel.shape), ("1", self.bias.shape)):
            if key in store:
                store[key] = _unflatten(store[key], shape)
        super().load_own_variables(store)

    def get_config(self):
        config = super().get_config()
        for key in ("equation", "output_shape", "bias_axes"):
            config.pop(key)
        config["hidden_dim"] = self.hidden_dim
        return config


def _unflatten(value, shape):
    # Only the flat form of `shape` (its last two axes merged) is reshaped;
    # anything else goes on to Keras' own shape check and error.
    shape = tuple(shape)
    if (len(shape) >= 2 and tuple(value.shape[:-1]) == shape[:-2]
            and value.shape[-1] == shape[-2] * shape[-1]):
        return np.reshape(value, shape)
    return value
