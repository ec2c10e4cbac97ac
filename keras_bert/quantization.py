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
* On PyTorch, int8 x int8 products on the CPU run as integer GEMMs
  (`use_cpu_int8_kernels`).
"""

import functools

import keras


def is_gemm_layer(layer):
    """The default `filters` of `quantize`: Dense and EinsumDense layers."""
    return isinstance(layer, (keras.layers.Dense, keras.layers.EinsumDense))


def is_quantized(model):
    """Whether any layer of `model` (a backbone or task) is quantized."""
    return any(layer.quantization_mode is not None
               for layer in model._flatten_layers())


def needs_xla(model):
    """Whether `model` must run under XLA where Keras would leave it off.

    Keras turns XLA off for TensorFlow on machines without an accelerator,
    and TensorFlow's own int8 matmul kernels are about 10x slower than
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
        for layer in model._flatten_layers(include_self=False)
        if layer.quantization_mode is not None
    }
    if not quantized:
        return policy
    return keras.dtype_policies.DTypePolicyMap(
        default_policy=policy, policy_map=quantized
    )


def use_cpu_int8_kernels():
    """On PyTorch, runs Keras' int8 inference on the CPU with faster kernels.

    Keras' PyTorch backend computes an int8 matmul or einsum off CUDA by
    casting both operands to int32 (`torch._int_mm` is used on CUDA only),
    and PyTorch's int32 matmul is 4x slower than its float32 one: a
    quantized all-MiniLM-L6-v2 ran at 0.07-0.24x its float32 speed.
    `torch._int_mm` on the CPU gives the same int32 results about 20x
    faster (docs/performance.md, "Lower precision"). This replaces the
    backend's `matmul` and `einsum` with versions that send int8 CPU
    products of the forms a quantized `Dense` and `EinsumDense` compute
    (`(..., k) @ (k, n)`, and an einsum that contracts the input's last
    axis with the kernel's first) to it, and everything else to Keras.

    It also replaces `keras.quantizers.abs_max_quantize`, which quantizes
    every activation per token before its GEMM, with the same arithmetic
    in fewer passes for float32 CPU tensors (`_abs_max_quantize`): Keras'
    clips with tensor bounds, a kernel 6x slower than a scalar clamp.

    Results are bit for bit Keras' own. Called when a backbone is
    quantized or built quantized; idempotent; a no-op on other backends.
    """
    if keras.config.backend() != "torch":
        return
    # Only reached under the torch backend, whose Keras modules it changes.
    from keras.src.backend.torch import numpy as torch_numpy
    from keras.src.quantizers import quantizers

    if getattr(torch_numpy.matmul, "cpu_int8_kernels", False):
        return
    keras_matmul, keras_einsum = torch_numpy.matmul, torch_numpy.einsum
    keras_quantize = quantizers.abs_max_quantize

    @functools.wraps(keras_matmul)
    def matmul(x1, x2):
        x1 = torch_numpy.convert_to_tensor(x1)
        x2 = torch_numpy.convert_to_tensor(x2)
        if x1.ndim >= 1 and x2.ndim == 2 and _on_cpu_int8(x1, x2):
            return _int8_gemm(x1, x2)
        return keras_matmul(x1, x2)

    @functools.wraps(keras_einsum)
    def einsum(subscripts, *operands, **kwargs):
        if (len(operands) == 2 and not kwargs and isinstance(subscripts, str)
                and _is_last_axis_contraction(subscripts)):
            x, kernel = (torch_numpy.convert_to_tensor(operand)
                         for operand in operands)
            if _on_cpu_int8(x, kernel):
                out = _int8_gemm(x, kernel.reshape(kernel.shape[0], -1))
                return out.reshape(*x.shape[:-1], *kernel.shape[1:])
        return keras_einsum(subscripts, *operands, **kwargs)

    @functools.wraps(keras_quantize)
    def abs_max_quantize(inputs, axis, value_range=(-127, 127),
                         dtype="int8", epsilon=keras.config.epsilon(),
                         to_numpy=False):
        if not to_numpy and dtype == "int8":
            inputs = torch_numpy.convert_to_tensor(inputs)
            if str(inputs.dtype) == "torch.float32" and (
                    inputs.device.type == "cpu"):
                return _abs_max_quantize(inputs, axis, value_range, epsilon)
        return keras_quantize(inputs, axis, value_range, dtype, epsilon,
                              to_numpy)

    matmul.cpu_int8_kernels = True
    torch_numpy.matmul, torch_numpy.einsum = matmul, einsum
    quantizers.abs_max_quantize = abs_max_quantize


def _on_cpu_int8(x1, x2):
    return (str(x1.dtype) == str(x2.dtype) == "torch.int8"
            and x1.device.type == x2.device.type == "cpu")


def _int8_gemm(x, kernel):
    """`x @ kernel` in int32 for int8 `x` (any rank) and 2-D `kernel`."""
    # Only reached with torch tensors (`use_cpu_int8_kernels`).
    import torch

    rows = x.reshape(-1, x.shape[-1]).contiguous()
    out = torch._int_mm(rows, kernel.contiguous())
    return out.reshape(*x.shape[:-1], kernel.shape[-1])


def _abs_max_quantize(x, axis, value_range, epsilon):
    """Keras' `abs_max_quantize` of a float32 torch tensor, same bits.

    The order of operations is Keras': `value_range[1] / (max|x| + eps)`
    as a float32 division, then `x * scale` rounded half to even, clipped
    and cast; the in-place steps only skip temporaries.
    """
    # Only reached with torch tensors (`use_cpu_int8_kernels`).
    import torch

    if isinstance(axis, list):
        axis = tuple(axis)
    largest = torch.amax(torch.abs(x), dim=axis, keepdim=True)
    scale = torch.div(torch.tensor(value_range[1], dtype=x.dtype),
                      largest.add_(epsilon))
    quantized = torch.mul(x, scale).round_().clamp_(*value_range)
    return quantized.to(torch.int8), scale


def _is_last_axis_contraction(subscripts):
    """Whether `subscripts` is `x @ kernel` over x's last, kernel's first
    axis, the rest in order: e.g. "bld,dkh->blkh" (`FusedQueryKeyValue`)."""
    inputs, arrow, output = subscripts.replace(" ", "").partition("->")
    operands = inputs.split(",")
    if not arrow or len(operands) != 2 or "." in subscripts:
        return False
    x, kernel = operands
    letters = x + kernel[1:]
    return (len(x) >= 1 and len(kernel) >= 2 and x[-1] == kernel[0]
            and len(set(letters)) == len(letters)
            and output == x[:-1] + kernel[1:])
