"""What `quantize` changes in a BERT model, and how a quantized one is saved.

Quantization is Keras' own (`keras.Model.quantize`: int8 weights per output
channel, activations quantized per token at run time). Two choices are
keras_bert's:

* By default only the GEMMs are quantized: every `Dense` and the fused
  query/key/value `EinsumDense`. Embedding tables stay in the float dtype:
  a lookup does no arithmetic, so int8 tables would add error (and untie
  the masked-LM decoder) without making anything faster.
* A quantized backbone saves its per-layer dtypes as a
  `keras.dtype_policies.DTypePolicyMap` in its config, keyed by layer path,
  so `.keras` files and keras_bert presets rebuild the int8 variables before
  the weights are read.
* On TensorFlow a quantized model runs as XLA programs (`needs_xla`).
* On PyTorch, a quantized keras_bert model's int8 products run on faster
  kernels with the same results, while it runs and for its layers only
  (`keras_bert.torch_int8`).
"""

import contextlib
import gc

import keras

from keras_bert._compat.layer_tracking import flatten_layers


def is_gemm_layer(layer):
    """The default `filters` of `quantize`: Dense and EinsumDense layers."""
    return isinstance(layer, (keras.layers.Dense, keras.layers.EinsumDense))


def quantized_layers(model):
    """The quantized layers of `model` (a backbone or task), in order."""
    return [layer for layer in flatten_layers(model)
            if layer.quantization_mode is not None]


def is_quantized(model):
    """Whether any layer of `model` (a backbone or task) is quantized."""
    return bool(quantized_layers(model))


def needs_xla(model):
    """Whether `model` must run under XLA where Keras would leave it off.

    Keras turns XLA off for TensorFlow on machines without an accelerator,
    and TensorFlow's own int8 matmul kernels are several times slower than
    XLA's on a CPU (docs/performance.md), so a quantized model turns it on.
    """
    return keras.config.backend() == "tensorflow" and is_quantized(model)


def dtype_for_config(model):
    """The model's dtype policy, or a map of its quantized layers' ones."""
    policy = model.dtype_policy
    if isinstance(policy, keras.dtype_policies.DTypePolicyMap):
        return policy
    quantized = {
        layer.path: layer.dtype_policy
        for layer in flatten_layers(model, include_self=False)
        if layer.quantization_mode is not None
    }
    if not quantized:
        return policy
    return keras.dtype_policies.DTypePolicyMap(
        default_policy=policy, policy_map=quantized
    )


@contextlib.contextmanager
def one_garbage_collection():
    """Runs the block with `gc.collect` as a no-op, then collects once.

    Keras' `Layer.__delattr__` calls `gc.collect()` for every variable a
    layer drops, so the device frees the buffer; quantizing drops each
    float kernel, and with a model in memory each collection is slow: most
    of what `quantize("int8")` took (docs/performance.md). One collection
    at the end frees the same buffers.
    """
    collect = gc.collect
    gc.collect = lambda generation=2: 0
    try:
        yield
    finally:
        gc.collect = collect
        collect()
