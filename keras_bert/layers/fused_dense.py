import keras

from keras_bert import fused_ops
from keras_bert._compat.sublayer_call import DirectSublayerCall


@keras.saving.register_keras_serializable(package="keras_bert")
class FusedDense(DirectSublayerCall, keras.layers.Dense):
    """A `keras.layers.Dense` that adds its bias inside the GEMM where the
    backend can (`keras_bert.fused_ops.dense`: one `addmm` on PyTorch).

    The same variables, math, initializers, LoRA and quantization as
    `Dense` (a quantized layer runs Keras' int8 path unchanged); only the
    float product is one kernel instead of two on PyTorch. Under JAX and
    TensorFlow it is `Dense` exactly: XLA fuses the bias already.

    Args:
        units: int. Output width.
        **kwargs: passed to `keras.layers.Dense` (activation, use_bias,
            initializers, dtype, name).

    Example:
    >>> import numpy as np
    >>> layer = FusedDense(4, kernel_initializer="ones",
    ...                    bias_initializer="ones")
    >>> layer(np.ones((2, 3), "float32")).shape[-1]
    4
    """

    def call(self, inputs, training=None):
        outputs = fused_ops.dense(inputs, self.kernel, self.bias)
        if self.activation is not None:
            outputs = self.activation(outputs)
        return outputs

    def quantize(self, mode=None, type_check=True, config=None):
        # Keras quantizes only exact `Dense`s unless told the subclass is
        # one: a quantized layer runs Keras' own quantized call, not `call`.
        super().quantize(mode, type_check=False, config=config)
