import keras
from keras import ops

from keras_bert import fused_ops
from keras_bert._compat.sublayer_call import DirectSublayerCall


@keras.saving.register_keras_serializable(package="keras_bert")
class FusedLayerNormalization(DirectSublayerCall,
                              keras.layers.LayerNormalization):
    """A `keras.layers.LayerNormalization` over the last axis that runs as
    one kernel on PyTorch (`keras_bert.fused_ops.layer_norm`).

    The same variables, config and float32 results as Keras' layer. In
    bfloat16 or float16 on PyTorch it normalizes the inputs in their own
    dtype with PyTorch's `layer_norm`, which accumulates in float32 itself,
    where Keras casts them to float32 and the result back (two copies a
    call; docs/performance.md has the bfloat16 forward's gain); outputs
    agree to one unit in the last place. Under JAX and TensorFlow it is
    Keras' layer exactly. Other axes and RMS scaling take Keras' call.

    Args:
        epsilon: float. Added to the variance.
        **kwargs: passed to `keras.layers.LayerNormalization` (axis,
            center, scale, initializers, dtype, name).

    Example:
    >>> import numpy as np
    >>> layer = FusedLayerNormalization(epsilon=1e-12)
    >>> y = layer(np.array([[1.0, 2.0, 3.0]], "float32"))
    >>> [round(float(v), 4) for v in ops.convert_to_numpy(y)[0]]
    [-1.2247, 0.0, 1.2247]
    """

    def call(self, inputs):
        outputs = None
        if (not self.rms_scaling and self.center and self.scale
                and tuple(self.axis) in ((-1,), (len(inputs.shape) - 1,))):
            outputs = fused_ops.layer_norm(inputs, self.gamma, self.beta,
                                           self.epsilon)
        if outputs is None:
            return super().call(inputs)
        return ops.cast(outputs, self.compute_dtype)
