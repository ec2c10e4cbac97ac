"""What keras_bert's layers run in fewer, faster kernels on PyTorch.

Under JAX and TensorFlow, XLA fuses a GEMM's bias add into the GEMM and
reads attention's inputs in whatever layout they come; these functions are
then exactly the `keras.ops` calls a Keras layer makes. PyTorch runs
eagerly by default, and three of Keras' calls there cost passes over
memory that `torch.nn.Linear`-based models (transformers) do not pay; the
last two points are Python between kernels:

* `Dense` is `ops.matmul` and then `ops.add` of the bias: a second pass
  over every output. `torch.nn.functional.linear` is one `addmm`, the bias
  added inside the GEMM. Without gradients (`predict`, `encode`), a
  float32 product on an AMD CPU goes to oneDNN's linear kernel instead of
  PyTorch's `addmm`, whose float32 GEMM is MKL's, which takes slow paths
  on AMD's CPUs; on Intel's, MKL's is the faster of the two
  (`onednn_gemms_pay`).
* Keras' `ops.dot_product_attention` makes the query, key and value
  contiguous before calling SDPA; SDPA takes the strided views as they
  are, so the copies are pure cost. Calling SDPA directly also skips
  Keras' CUDA probe for its flash kernel (SDPA picks its own kernel),
  a C++ object that ends a `torch.compile` graph.
* Keras' `ops.layer_normalization` casts bfloat16 and float16 inputs to
  float32 and the result back; PyTorch's `layer_norm` accumulates in
  float32 itself.
* Keras' per-call Python: `ops.convert_to_tensor` of every argument and
  `ops.reshape`'s search for symbolic tensors take longer than a short
  input's kernels. Inside a layer's call the arguments are tensors and
  variables already (`_torch_tensors`), a tensor reshapes itself
  (`reshape`), and a padding mask of ones is dropped once for the whole
  stack (`padding_mask_or_none`).
* For inference on short unpadded rows, a whole encoder block is one
  call of PyTorch's fused encoder kernel (`encoder_block`), with no
  Python between its kernels.

PyTorch's private kernels (oneDNN's linear) are reached through
`keras_bert._compat.torch_ops`, which falls back to public ones.

Measured in docs/performance.md ("PyTorch's float32 GEMMs and
`keras_bert.fused_ops`", "Sub-layers called without Keras' `__call__`").
"""

import functools

import keras
from keras import ops

from keras_bert._compat import torch_ops

# The longest rows `encoder_block` gives PyTorch's fused kernel: measured
# in docs/performance.md ("PyTorch's fused encoder kernel").
FUSED_BLOCK_MAX_LENGTH = 128
# The activations PyTorch's fused encoder kernel computes: `use_gelu`.
_FUSED_ACTIVATIONS = {"gelu": True, "gelu_exact": True, "relu": False}

# Keras' large negative logit for masked keys (float16 has a smaller range):
# finite, so a query whose keys are all padding gets uniform weights, not NaN.
_MASKED_LOGIT = {"float16": -0.7 * 65500.0}
_MASKED_LOGIT_DEFAULT = -0.7 * 3.38953e38


def dense(inputs, kernel, bias=None):
    """`inputs @ kernel + bias`, the kernel's first axis contracted with
    the inputs' last: one kernel on PyTorch (oneDNN's linear for float32 on
    a CPU without gradients, `linear` otherwise), `ops.matmul` then
    `ops.add` (as `keras.layers.Dense`) elsewhere.

    Args:
        inputs: tensor `(..., in)`.
        kernel: tensor or variable `(in, *out)`, e.g. `(in, out)` or the
            query/key/value projection's `(in, 3, hidden)`.
        bias: tensor, variable or None. `out`'s shape.

    Returns:
        The tensor `(..., *out)`.

    Example:
    >>> import numpy as np
    >>> y = dense(np.ones((2, 3), "float32"), np.ones((3, 4), "float32"),
    ...           np.arange(4, dtype="float32"))
    >>> ops.convert_to_numpy(y)[0].tolist()
    [3.0, 4.0, 5.0, 6.0]
    """
    if keras.config.backend() == "torch" and bias is not None:
        return _torch_dense(inputs, kernel, bias)
    if len(kernel.shape) == 2:
        outputs = ops.matmul(inputs, kernel)
    else:
        outputs = ops.tensordot(inputs, kernel, axes=1)
    return outputs if bias is None else ops.add(outputs, bias)


def dot_product_attention(query, key, value, mask, scale):
    """Softmax attention of `(batch, length, heads, head_dim)` inputs, as
    `keras.ops.dot_product_attention(..., mask=mask, scale=scale)`; on
    PyTorch SDPA on the strided views, without Keras' copies.

    Args:
        query, key, value: tensors `(batch, length, heads, head_dim)`.
        mask: bool tensor that broadcasts to `(batch, heads, queries,
            keys)` (True: may attend), or None.
        scale: float. Multiplies the logits.

    Returns:
        The tensor `(batch, length, heads, head_dim)`.
    """
    if keras.config.backend() == "torch":
        return _torch_attention(query, key, value, mask, scale)
    return ops.dot_product_attention(query, key, value, mask=mask,
                                     scale=scale)


def layer_norm(inputs, gamma, beta, epsilon):
    """LayerNorm over the last axis in one PyTorch `layer_norm` kernel on
    the inputs' own dtype; None where that kernel does not apply (another
    backend, or float32 inputs with half-precision parameters), for the
    caller to take Keras' `keras.layers.LayerNormalization` call.

    Keras computes half-precision inputs in float32: it casts them (and the
    scale and offset) up, normalizes, and casts back, two copies a call.
    PyTorch's kernel takes bfloat16 or float16 inputs, with parameters of
    the same dtype or float32, and accumulates in float32 itself; the
    results differ from Keras' by at most one unit in the last place of
    the half-precision output (float32: the same kernel, the same result).

    Args:
        inputs: tensor `(..., features)`.
        gamma, beta: tensors or variables `(features,)`.
        epsilon: float. Added to the variance.

    Returns:
        A tensor of the inputs' dtype, or None.
    """
    if keras.config.backend() != "torch":
        return None
    # Only reached under the torch backend, whose tensors these are.
    import torch

    inputs, gamma, beta = _torch_tensors(inputs, gamma, beta)
    # The parameter dtypes PyTorch's kernel takes for these inputs.
    if not (gamma.dtype == beta.dtype
            and gamma.dtype in (inputs.dtype, torch.float32)):
        return None
    return torch.nn.functional.layer_norm(inputs, (inputs.shape[-1],),
                                          gamma, beta, epsilon)


def padding_mask_or_none(padding_mask):
    """None for a padding mask with no padded token on eager PyTorch, else
    the mask as given.

    A mask of ones changes no attention weight. Without it every block
    skips its mask work (the fused kernel's check for padding, the
    additive mask of the separate kernels), one check for the whole
    stack. Compiled code (JAX, TensorFlow, `torch.compile`) keeps the mask:
    it would have to branch on a value it does not know when tracing.

    Args:
        padding_mask: `(batch, length)`, 1 for real tokens, or None.

    Example:
    >>> mask = ops.convert_to_tensor([[1, 1, 0]], "int32")
    >>> padding_mask_or_none(mask) is mask  # a padded token: kept
    True
    """
    if (padding_mask is None or keras.config.backend() != "torch"
            or not ops.is_tensor(padding_mask) or torch_ops.is_compiling()):
        return padding_mask
    return None if _pads_nothing(padding_mask) else padding_mask


def encoder_block(inputs, padding_mask, weights, num_heads, activation,
                  normalize_first, epsilon):
    """A BERT encoder block for inference in PyTorch's fused kernel, or
    None where that kernel does not apply, for the caller to run its layers.

    On PyTorch, without gradients, on the CPU, in float32 and with no
    padded token, the block is one call of the kernel
    `torch.nn.TransformerEncoderLayer` runs in `eval()`
    (`keras_bert._compat.torch_ops.encoder_layer`): no Python between its
    dozen kernels, which is most of a short input's time, and the
    residual adds inside the projections' epilogues. The results agree
    with the separate kernels to float32 rounding, not bit for bit. The
    kernel's attention holds every (query, key) score where SDPA works in
    blocks: past `FUSED_BLOCK_MAX_LENGTH` tokens a row, and with padding
    (a masked softmax), it is slower than the layers (docs/performance.md,
    "PyTorch's fused encoder kernel"), which then run.

    Args:
        inputs: tensor `(batch, length, hidden)`.
        padding_mask: `(batch, length)`, 1 for real tokens, or None.
        weights: the block's 12 variables in Keras' layouts: QKV kernel
            `(hidden, 3, hidden)` and bias `(3, hidden)`, attention output
            kernel and bias, first LayerNorm's gamma and beta,
            intermediate kernel and bias, output kernel and bias, second
            LayerNorm's gamma and beta.
        num_heads: int.
        activation: str, the feed-forward activation's name.
        normalize_first: bool. Pre-norm instead of post-norm.
        epsilon: float. Both LayerNorms' epsilon.

    Returns:
        The block's output, or None.
    """
    use_gelu = _FUSED_ACTIVATIONS.get(activation)
    if keras.config.backend() != "torch" or use_gelu is None:
        return None
    # Only reached under the torch backend, whose tensors these are.
    import torch

    if (torch.is_grad_enabled() or torch_ops.is_compiling()
            or not ops.is_tensor(inputs) or inputs.device.type != "cpu"
            or inputs.dtype != torch.float32 or inputs.ndim != 3
            or inputs.shape[1] > FUSED_BLOCK_MAX_LENGTH):
        return None
    weights = _torch_tensors(*weights)
    if any(w.dtype != torch.float32 for w in weights):
        return None
    if padding_mask is not None and not _pads_nothing(padding_mask):
        return None
    hidden = inputs.shape[-1]
    (qkv_kernel, qkv_bias, attention_kernel, attention_bias, gamma1, beta1,
     intermediate_kernel, intermediate_bias, output_kernel, output_bias,
     gamma2, beta2) = weights
    # `(out, in)` views of Keras' `(in, out)` kernels, read transposed.
    return torch_ops.encoder_layer(
        inputs, num_heads,
        (qkv_kernel.reshape(hidden, -1).t(), qkv_bias.reshape(-1),
         attention_kernel.t(), attention_bias, gamma1, beta1,
         intermediate_kernel.t(), intermediate_bias, output_kernel.t(),
         output_bias, gamma2, beta2),
        use_gelu, normalize_first, epsilon)


def reshape(x, shape):
    """`ops.reshape(x, shape)`; a PyTorch tensor's own `reshape` on PyTorch.

    Keras' `ops.reshape` checks its arguments for symbolic tensors first,
    which on PyTorch takes longer than a small tensor's reshape (a view);
    the attention reshapes twice a layer. Symbolic tensors and the other
    backends (whose compilers trace it once) take `ops.reshape`.

    Args:
        x: tensor.
        shape: tuple of ints (one may be -1).

    Example:
    >>> tuple(reshape(ops.ones((2, 6)), (2, 3, 2)).shape)
    (2, 3, 2)
    """
    if keras.config.backend() == "torch" and ops.is_tensor(x):
        return x.reshape(shape)
    return ops.reshape(x, shape)


@functools.cache
def onednn_gemms_pay():
    """Whether float32 inference GEMMs on this CPU are faster in oneDNN's
    linear kernel than in PyTorch's `addmm` (MKL): on AMD CPUs, where MKL
    takes its generic paths (docs/performance.md measures both kinds).

    Example:
    >>> onednn_gemms_pay() in (True, False)
    True
    """
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("vendor_id"):
                    return "AuthenticAMD" in line
    except OSError:
        pass
    return False


def _torch_dense(inputs, kernel, bias):
    # Only reached under the torch backend, whose tensors these are.
    import torch

    # `.t()` is a view, read transposed. A kernel of more axes is the same
    # GEMM on its output axes merged; torch's own reshapes (views) skip
    # `ops.reshape`'s per-call Python.
    inputs, kernel, bias = _torch_tensors(inputs, kernel, bias)
    output_shape = (*inputs.shape[:-1], *kernel.shape[1:])
    kernel, bias = kernel.reshape(kernel.shape[0], -1), bias.reshape(-1)
    # oneDNN's linear has no gradient (its inputs' `.grad` stays None), and
    # under torch.compile inductor picks its own kernels.
    if (not torch.is_grad_enabled() and not torch_ops.is_compiling()
            and inputs.device.type == "cpu" and onednn_gemms_pay()
            and inputs.dtype == kernel.dtype == bias.dtype == torch.float32):
        outputs = torch_ops.onednn_linear(
            inputs.reshape(-1, inputs.shape[-1]), kernel.t(), bias)
        if outputs is not None:
            return outputs.reshape(output_shape)
    return torch.nn.functional.linear(inputs, kernel.t(),
                                      bias).reshape(output_shape)


def _pads_nothing(padding_mask):
    # Only reached under the torch backend, whose tensors these are.
    import torch

    return bool(torch.all(*_torch_tensors(padding_mask)))


def _torch_tensors(*values):
    # A variable's `.value` is the tensor Keras' `convert_to_tensor` gives
    # for it (the autocast scope applied), and a tensor inside a layer's
    # call is already on the layer's device: Keras' conversion of every
    # argument is left for what is neither, such as NumPy arrays.
    import torch  # only reached under the torch backend

    return [value.value if isinstance(value, keras.Variable)
            else value if isinstance(value, torch.Tensor)
            else ops.convert_to_tensor(value) for value in values]


def _torch_attention(query, key, value, mask, scale):
    # Only reached under the torch backend, whose tensors these are.
    import torch

    query, key, value = (x.transpose(1, 2) for x in _torch_tensors(
        query, key, value))
    if mask is not None:
        dtype_name = keras.backend.standardize_dtype(query.dtype)
        masked = _MASKED_LOGIT.get(dtype_name, _MASKED_LOGIT_DEFAULT)
        mask = torch.where(*_torch_tensors(mask), 0.0,
                           masked).to(query.dtype)
    outputs = torch.nn.functional.scaled_dot_product_attention(
        query, key, value, attn_mask=mask, scale=scale)
    return outputs.transpose(1, 2)
