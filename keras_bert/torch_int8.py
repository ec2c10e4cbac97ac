"""What keras_bert changes in Keras' PyTorch backend for int8 inference.

Keras 3.15 runs a quantized model on PyTorch through slow or
uncompilable paths; `use_fast_torch_int8` replaces four of them with
ones that give the same results, bit for bit (tests/models/
test_quantization.py), and leaves every other call to Keras. Measured on
int8 all-MiniLM-L6-v2 in docs/performance.md ("Lower precision").
"""

import functools
import platform

import keras


def use_fast_torch_int8():
    """On PyTorch, runs Keras' int8 inference faster, with the same results.

    * int8 x int8 products on the CPU: Keras casts both operands to int32
      (it uses `torch._int_mm` on CUDA only), and PyTorch's int32 matmul
      is 4x slower than its float32 one (a quantized MiniLM ran at
      0.07-0.24x its float32). The backend's `matmul` and `einsum` send
      int8 CPU products of the forms a quantized `Dense` and `EinsumDense`
      compute (`(..., k) @ (k, n)`, and an einsum that contracts the
      input's last axis with the kernel's first) to `torch._int_mm`, or,
      on an x86 CPU without int8 dot-product instructions (VNNI, AMX),
      where `_int_mm` is slower still, to float32 GEMMs that give the
      same int32 result exactly (`_int8_gemm_in_float32`).
    * Activation quantization (`keras.quantizers.abs_max_quantize`, once
      per GEMM): Keras clips with tensor bounds, a kernel 6x slower than a
      clamp to numbers; float32 CPU tensors take the same arithmetic in
      fewer passes (`_abs_max_quantize`).
    * `keras.ops.custom_gradient`, which wraps every quantized product:
      with gradients off (`predict`, `torch.no_grad`) it runs the forward
      function directly instead of through a `torch.autograd.Function`,
      whose bookkeeping costs time and which `torch.compile` cannot trace
      (Keras' `Function` sets attributes on its context and catches an
      exception), so a compiled int8 model was cut into 22-37 graphs.
    * `transpose` takes its axes as a tuple: `EinsumDense` passes a
      tracked list when it reshapes its scales, which `torch.compile`
      cannot trace either.

    Called when a backbone is quantized or built quantized; idempotent; a
    no-op on other backends.
    """
    if keras.config.backend() != "torch":
        return
    # Only reached under the torch backend, whose Keras modules it changes.
    from keras.src.backend.torch import core
    from keras.src.backend.torch import numpy as torch_numpy
    from keras.src.quantizers import quantizers

    if getattr(torch_numpy.matmul, "fast_torch_int8", False):
        return
    global _int_mm_is_fast
    _int_mm_is_fast = cpu_has_int8_dot_products()
    keras_matmul, keras_einsum = torch_numpy.matmul, torch_numpy.einsum
    keras_transpose = torch_numpy.transpose
    keras_quantize = quantizers.abs_max_quantize
    keras_custom_gradient = core.custom_gradient.__call__

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

    @functools.wraps(keras_transpose)
    def transpose(x, axes=None):
        return keras_transpose(x, None if axes is None else tuple(axes))

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

    @functools.wraps(keras_custom_gradient)
    def custom_gradient_call(self, *args, **kwargs):
        if _grad_enabled():
            return keras_custom_gradient(self, *args, **kwargs)
        # The contract is `(output, grad_fn)`; Keras' own call also takes
        # a bare output.
        result = self.forward_fn(*args, **kwargs)
        if isinstance(result, tuple) and len(result) == 2:
            return result[0]
        return result

    matmul.fast_torch_int8 = True
    torch_numpy.matmul, torch_numpy.einsum = matmul, einsum
    torch_numpy.transpose = transpose
    quantizers.abs_max_quantize = abs_max_quantize
    core.custom_gradient.__call__ = custom_gradient_call


def _grad_enabled():
    # Only reached under the torch backend (`use_fast_torch_int8`).
    import torch

    return torch.is_grad_enabled()


def _on_cpu_int8(x1, x2):
    return (str(x1.dtype) == str(x2.dtype) == "torch.int8"
            and x1.device.type == x2.device.type == "cpu")


def _int8_gemm(x, kernel):
    """`x @ kernel` in int32 for int8 `x` (any rank) and 2-D `kernel`."""
    # Only reached with torch tensors (`use_fast_torch_int8`).
    import torch

    rows = x.reshape(-1, x.shape[-1]).contiguous()
    if _int_mm_is_fast:
        out = torch._int_mm(rows, kernel.contiguous())
    else:
        out = _int8_gemm_in_float32(rows, kernel)
    return out.reshape(*x.shape[:-1], kernel.shape[-1])


# int8 products are at most 128 * 128 = 2**14 in magnitude, so a sum of
# up to 2**10 of them, and every partial sum on the way, is an integer of
# at most 2**24: exact in float32, whatever order the GEMM adds in.
_EXACT_FLOAT32_DEPTH = 1024


def _int8_gemm_in_float32(rows, kernel):
    """`rows @ kernel` (2-D int8) in int32, exactly, from float32 GEMMs.

    Where the CPU has no int8 dot-product instructions, PyTorch's
    `_int_mm` multiplies at a few GFLOP/s (a quantized MiniLM ran at
    0.03-0.23x its float32 on an AVX2 machine), while float32 GEMMs run at the
    machine's full rate. Each slice of at most 1,024 of the contracted
    axis is one float32 GEMM with an exact result; the slices are added
    in int32, as `_int_mm` accumulates.
    """
    # Only reached with torch tensors (`use_fast_torch_int8`).
    import torch

    depth = rows.shape[-1]
    out = None
    for start in range(0, depth, _EXACT_FLOAT32_DEPTH):
        stop = min(start + _EXACT_FLOAT32_DEPTH, depth)
        part = torch.mm(rows[:, start:stop].float(),
                        kernel[start:stop].float()).to(torch.int32)
        out = part if out is None else out.add_(part)
    return out


# Set by `use_fast_torch_int8`, outside any compiled forward (which cannot
# read /proc/cpuinfo).
_int_mm_is_fast = True


def cpu_has_int8_dot_products():
    """Whether `torch._int_mm` on this CPU has instructions to run on.

    True off x86 and where the flags cannot be read (PyTorch's own choice
    stands), and on x86 CPUs with AVX-512 VNNI, AVX-VNNI or AMX; False on
    other x86 CPUs (AVX2 without VNNI), where `_int8_gemm` takes float32
    GEMMs instead.
    """
    if platform.machine().lower() not in _X86_MACHINES:
        return True
    flags = _cpu_flags()
    return flags is None or bool(_INT8_DOT_FLAGS & flags)


_X86_MACHINES = ("x86_64", "amd64", "i686", "x86")
_INT8_DOT_FLAGS = {"avx512_vnni", "avx_vnni", "amx_int8"}


def _cpu_flags():
    """The CPU's feature flags as Linux lists them, or None elsewhere."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("flags"):
                    return set(line.partition(":")[2].split())
    except OSError:
        pass
    return None


def _abs_max_quantize(x, axis, value_range, epsilon):
    """Keras' `abs_max_quantize` of a float32 torch tensor, same bits.

    The order of operations is Keras': `value_range[1] / (max|x| + eps)`
    as a float32 division, then `x * scale` rounded half to even, clipped
    and cast; the in-place steps only skip temporaries.
    """
    # Only reached with torch tensors (`use_fast_torch_int8`).
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
