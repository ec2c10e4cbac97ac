"""keras_bert's answer to `jit_compile="auto"`: XLA on TensorFlow too.

Keras compiles a model's train, test and predict functions with XLA on JAX
and on TensorFlow with an accelerator, but leaves XLA off for TensorFlow on
a machine with only CPUs. A BERT model is static-shaped GEMMs and small
element-wise kernels, which XLA fuses, and on CPUs it is faster compiled:
pretraining and fine-tuning steps and the forward pass, and a quantized
model by far, where TensorFlow's own int8 kernels are slow
(docs/performance.md#xla-on-tensorflow). So keras_bert's backbones and
tasks answer "auto" with XLA on TensorFlow everywhere, except under a
`tf.distribute` strategy, where Keras turns it off for reasons that hold
for BERT too (a quantized model keeps XLA there: without it int8 is slower
than float32). PyTorch stays eager, as in Keras: `torch.compile` does not
make BERT faster on a CPU.
"""

import keras

from keras_bert._compat.layer_tracking import flatten_layers
from keras_bert._compat.model_compile import has_distribution_strategy
from keras_bert.quantization import needs_xla


def xla_by_default(model):
    """Whether `model` (a backbone or task) compiles with XLA on "auto"."""
    if keras.config.backend() != "tensorflow":
        return False
    if needs_xla(model):
        return True
    return (not has_distribution_strategy(model)
            and all(layer.supports_jit for layer in flatten_layers(model)))
