"""How a keras_bert model compiles: XLA for "auto", the saved setting,
and a training step's state built before TensorFlow traces it.

Keras resolves `jit_compile="auto"` in the private
`Trainer._resolve_auto_jit_compile`, stores what `compile` was given in
the private `_compile_config`, keeps a model's `tf.distribute` strategy
in `_distribute_strategy` (the public `distribute_strategy` returns the
default strategy when there is none), and builds the optimizer and
metrics ahead of a step only in the private `Trainer._symbolic_build`.
Checked on Keras 3.13.0 (the floor) and 3.15.1; present since 3.10.0.
"""


class AutoJitCompile:
    """Mixin for a keras_bert `keras.Model`: `jit_compile="auto"` is True
    where the class's `xla_by_default(model)` says so, and Keras' answer
    otherwise.

    Fallback, where Keras no longer asks `_resolve_auto_jit_compile`:
    "auto" resolves as Keras decides (no XLA on TensorFlow without an
    accelerator: slower, the same results). A quantized model still turns
    XLA on itself (`keras_bert.quantization.needs_xla`).
    """

    # A function of the model, set by the class: keras_bert's rule.
    xla_by_default = None

    def _resolve_auto_jit_compile(self):
        return (type(self).xla_by_default(self)
                or super()._resolve_auto_jit_compile())


def save_jit_compile_as_auto(model):
    """Makes `model`'s saved compile config say `jit_compile="auto"`, so
    that it resolves again on the backend that loads it (Keras saves what
    "auto" resolved to on this one).

    Fallback, where `_compile_config` is gone: Keras' saved value stands
    (a model saved on TensorFlow or JAX compiles with torch.compile when
    reloaded on PyTorch: a slow first call, the same results).
    """
    compile_config = getattr(model, "_compile_config", None)
    if compile_config is not None and hasattr(compile_config, "config"):
        compile_config.config["jit_compile"] = "auto"


def has_distribution_strategy(model):
    """Whether TensorFlow runs `model` under a `tf.distribute` strategy
    (TensorFlow backend only).

    Fallback, where `_distribute_strategy` is gone: whether a strategy is
    in scope now (`tf.distribute.has_strategy`).
    """
    if hasattr(model, "_distribute_strategy"):
        return model._distribute_strategy is not None
    # Only reached under the TensorFlow backend (its callers check).
    import tensorflow as tf

    return tf.distribute.has_strategy()


def build_training_state(model, data_spec):
    """Builds `model`'s optimizer and compiled metrics for batches of
    `data_spec` (a `tf.data` element spec) before the first step.

    Fallback, where `_symbolic_build` is gone: nothing; Keras creates them
    inside the first traced step (TensorFlow then traces it twice: a
    slower first `fit`, the same training).
    """
    if hasattr(model, "_symbolic_build"):
        with model.distribute_strategy.scope():
            model._symbolic_build(data_batch=data_spec)
