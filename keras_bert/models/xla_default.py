"""keras_bert's answer to `jit_compile="auto"`: XLA on TensorFlow too.

Keras compiles a model's train, test and predict functions with XLA on JAX
and on TensorFlow with an accelerator, but leaves XLA off for TensorFlow on
a machine with only CPUs. A BERT model is static-shaped GEMMs and small
element-wise kernels, which XLA fuses, and on CPUs it is faster compiled
(docs/performance.md#xla-on-tensorflow): the default pretraining step
1.59x, a fine-tuning step of BERT mini at 32 x 128 1.17x, the forward of
all-MiniLM-L6-v2 1.23x; a quantized model about 10x, where TensorFlow's
own int8 kernels are slow. So keras_bert's backbones and tasks answer "auto" with XLA on
TensorFlow everywhere, except under a `tf.distribute` strategy, where
Keras turns it off for reasons that hold for BERT too (a quantized model
keeps XLA there: without it int8 is slower than float32). PyTorch stays
eager, as in Keras: `torch.compile` does not make BERT faster on a CPU.
"""

import keras

from keras_bert.quantization import needs_xla


def xla_by_default(model):
    """Whether `model` (a backbone or task) compiles with XLA on "auto"."""
    if keras.config.backend() != "tensorflow":
        return False
    if needs_xla(model):
        return True
    return (getattr(model, "_distribute_strategy", None) is None
            and all(layer.supports_jit for layer in model._flatten_layers()))
