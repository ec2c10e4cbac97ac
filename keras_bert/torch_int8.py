"""keras_bert's kernels for Keras' int8 inference on PyTorch: faster
paths, the same results bit for bit (tests/models/test_quantization.py).

Keras runs a quantized model on PyTorch through slow or uncompilable
paths:

* int8 x int8 products on the CPU: Keras casts both operands to int32
  (it takes PyTorch's int8 GEMM on CUDA only), and PyTorch's int32 matmul
  is several times slower than its float32 one. keras_bert sends int8 CPU
  products of the forms a quantized `Dense` and `EinsumDense` compute
  (`(..., k) @ (k, n)`, and an einsum that contracts the input's last
  axis with the kernel's first) to PyTorch's int8 GEMM, or, on an x86 CPU
  without int8 dot-product instructions (VNNI, AMX), where that GEMM is
  slower still, to float32 GEMMs that give the same int32 result exactly
  (`_int8_gemm_in_float32`).
* Activation quantization (`abs_max_quantize`, once per GEMM): Keras
  clips with tensor bounds, a slow kernel next to a clamp to numbers;
  float32 CPU tensors take the same arithmetic in fewer passes
  (`_abs_max_quantize`).
* `keras.ops.custom_gradient`, which wraps every quantized product: with
  gradients off (`predict`, `torch.no_grad`) the forward function runs
  directly instead of through a `torch.autograd.Function`, whose
  bookkeeping costs time and which `torch.compile` cannot trace (Keras'
  `Function` sets attributes on its context and catches an exception).
* `transpose` takes its axes as a tuple: `EinsumDense` passes a tracked
  list when it reshapes its scales, which `torch.compile` cannot trace
  either.

These run only while a keras_bert model runs (`FastTorchInt8`, or a
`with use_fast_torch_int8(model):` block), on that thread; every other
model in the process, and keras_bert's outside that call, runs Keras' own
functions (`keras_bert._compat.torch_int8_kernels` puts them in place and
back). docs/performance.md ("Lower precision") has the measured effect.
"""

import contextlib
import platform

import keras
from keras import ops

from keras_bert._compat.torch_int8_kernels import keras_functions_replaced
from keras_bert._compat.torch_int8_kernels import keras_original
from keras_bert._compat.torch_ops import int_mm
from keras_bert.quantization import is_quantized


class FastTorchInt8:
    """Mixin for a keras_bert `keras.Model`: on PyTorch, a quantized
    model's forward runs Keras' int8 products on keras_bert's kernels
    (`use_fast_torch_int8`); a float model's, and every other backend's,
    is unchanged. Put it before `keras.Model`.
    """

    def call(self, inputs, training=None, mask=None, **kwargs):
        with use_fast_torch_int8(self):
            return super().call(inputs, training=training, mask=mask,
                                **kwargs)

    def quantize(self, *args, **kwargs):
        super().quantize(*args, **kwargs)
        self._runs_int8 = is_quantized(self)


def use_fast_torch_int8(model=None):
    """A context manager: within it, on PyTorch, the int8 products of
    `model`'s quantized layers run on keras_bert's kernels, with the same
    results.

    A no-op on other backends and for a float model. `BertBackbone` (and
    every task, which calls its backbone) enters it on each forward; a
    caller that runs a backbone's layers itself enters it around them.
    (Before, a bare call installed the kernels for the whole process; it
    now only returns the context manager.)

    Args:
        model: a keras_bert model (or any Keras model or layer), or None
            for the kernels within the block whatever runs there.

    Example:
    >>> import keras_bert
    >>> model = keras_bert.BertBackbone.from_preset("bert_tiny_uncased_config")
    >>> with use_fast_torch_int8(model):
    ...     pass  # run the model's layers here
    """
    if keras.config.backend() != "torch":
        return contextlib.nullcontext()
    if model is not None:
        runs_int8 = getattr(model, "_runs_int8", None)
        if runs_int8 is None:
            runs_int8 = model._runs_int8 = is_quantized(model)
        if not runs_int8:
            return contextlib.nullcontext()
    return keras_functions_replaced(_REPLACEMENTS)


def _matmul(x1, x2):
    x1, x2 = ops.convert_to_tensor(x1), ops.convert_to_tensor(x2)
    if x1.ndim >= 1 and x2.ndim == 2 and _on_cpu_int8(x1, x2):
        return _int8_gemm(x1, x2)
    return keras_original("matmul")(x1, x2)


def _einsum(subscripts, *operands, **kwargs):
    if (len(operands) == 2 and not kwargs and isinstance(subscripts, str)
            and _is_last_axis_contraction(subscripts)):
        x, kernel = (ops.convert_to_tensor(operand) for operand in operands)
        if _on_cpu_int8(x, kernel):
            out = _int8_gemm(x, kernel.reshape(kernel.shape[0], -1))
            return out.reshape(*x.shape[:-1], *kernel.shape[1:])
    return keras_original("einsum")(subscripts, *operands, **kwargs)


def _transpose(x, axes=None):
    return keras_original("transpose")(
        x, None if axes is None else tuple(axes))


def _quantize(inputs, axis, value_range=(-127, 127), dtype="int8",
              epsilon=None, to_numpy=False):
    epsilon = keras.config.epsilon() if epsilon is None else epsilon
    if not to_numpy and dtype == "int8":
        inputs = ops.convert_to_tensor(inputs)
        if str(inputs.dtype) == "torch.float32" and (
                inputs.device.type == "cpu"):
            return _abs_max_quantize(inputs, axis, value_range, epsilon)
    return keras_original("abs_max_quantize")(inputs, axis, value_range,
                                              dtype, epsilon, to_numpy)


def _custom_gradient(forward_fn):
    with_gradient = keras_original("custom_gradient")(forward_fn)

    def call(*args, **kwargs):
        if _grad_enabled():
            return with_gradient(*args, **kwargs)
        # The contract is `(output, grad_fn)`; Keras' own call also takes
        # a bare output.
        result = forward_fn(*args, **kwargs)
        if isinstance(result, tuple) and len(result) == 2:
            return result[0]
        return result

    return call


_REPLACEMENTS = {"matmul": _matmul, "einsum": _einsum,
                 "transpose": _transpose, "abs_max_quantize": _quantize,
                 "custom_gradient": _custom_gradient}


def _grad_enabled():
    # Only reached under the torch backend (`use_fast_torch_int8`).
    import torch

    return torch.is_grad_enabled()


def _on_cpu_int8(x1, x2):
    return (str(x1.dtype) == str(x2.dtype) == "torch.int8"
            and x1.device.type == x2.device.type == "cpu")


def _int8_gemm(x, kernel):
    """`x @ kernel` in int32 for int8 `x` (any rank) and 2-D `kernel`."""
    rows = x.reshape(-1, x.shape[-1]).contiguous()
    if _INT8_GEMM_IS_FAST:
        out = int_mm(rows, kernel.contiguous())
    else:
        out = _int8_gemm_in_float32(rows, kernel)
    return out.reshape(*x.shape[:-1], kernel.shape[-1])


# int8 products are at most 128 * 128 = 2**14 in magnitude, so a sum of
# up to 2**10 of them, and every partial sum on the way, is an integer of
# at most 2**24: exact in float32, whatever order the GEMM adds in.
_EXACT_FLOAT32_DEPTH = 1024


def _int8_gemm_in_float32(rows, kernel):
    """`rows @ kernel` (2-D int8) in int32, exactly, from float32 GEMMs.

    Where the CPU has no int8 dot-product instructions, PyTorch's int8
    GEMM multiplies at a few GFLOP/s, while float32 GEMMs run at the
    machine's full rate. Each slice of at most 1,024 of the contracted
    axis is one float32 GEMM with an exact result; the slices are added
    in int32, as the int8 GEMM accumulates.
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


def cpu_has_int8_dot_products():
    """Whether PyTorch's int8 GEMM on this CPU has instructions to run on.

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


# Read once here, not inside a forward that `torch.compile` traces (which
# cannot read /proc/cpuinfo): the first processor's flags, a few lines.
_INT8_GEMM_IS_FAST = (keras.config.backend() != "torch"
                      or cpu_has_int8_dot_products())


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
