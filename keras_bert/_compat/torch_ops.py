"""PyTorch's private kernels that keras_bert's PyTorch paths call.

Every function imports torch inside: it is only reached under the torch
backend, and JAX and TensorFlow users need not have torch installed.
Checked on PyTorch 2.13.0 (the CPU wheel CI installs).
"""

import functools


def is_compiling():
    """Whether `torch.compile` is tracing the current call.

    `torch.compiler.is_compiling` is public from PyTorch 2.3; before it
    the same answer is the private `torch._dynamo.is_compiling`.
    """
    import torch  # only reached under the torch backend

    public = getattr(torch.compiler, "is_compiling", None)
    if public is not None:
        return public()
    return torch._dynamo.is_compiling()


def onednn_linear(inputs_2d, kernel_t, bias):
    """`inputs_2d @ kernel_t.T + bias` on oneDNN's linear kernel (float32,
    CPU, no gradient), or None where that kernel is unavailable.

    The kernel is the private `torch.ops.mkldnn._linear_pointwise` (the
    one inductor compiles a linear to). Fallback, where a release drops it
    or changes its signature (`onednn_linear_works` probes once): None,
    and the caller takes `torch.nn.functional.linear`.
    """
    if not onednn_linear_works():
        return None
    import torch  # only reached under the torch backend

    return torch.ops.mkldnn._linear_pointwise(inputs_2d, kernel_t, bias,
                                              "none", [], "")


@functools.cache
def onednn_linear_works():
    """Whether oneDNN's linear kernel exists and multiplies correctly."""
    import torch  # only reached under the torch backend

    if not (torch.backends.mkldnn.is_available()
            and hasattr(torch.ops.mkldnn, "_linear_pointwise")):
        return False
    try:
        with torch.no_grad():
            out = torch.ops.mkldnn._linear_pointwise(
                torch.ones(2, 3), torch.ones(4, 3), torch.zeros(4), "none",
                [], "")
    except (RuntimeError, TypeError):
        return False
    return bool(torch.equal(out, torch.full((2, 4), 3.0)))


def encoder_layer(inputs, num_heads, weights, use_gelu, norm_first,
                  epsilon):
    """One Transformer encoder layer in PyTorch's fused inference kernel,
    or None where that kernel is unavailable.

    The kernel is the private `torch._transformer_encoder_layer_fwd`, which
    `torch.nn.TransformerEncoderLayer` runs in `eval()` without gradients:
    the QKV projection, attention, output projection with the residual,
    both LayerNorms and the feed-forward pair in one C++ call. `weights`
    are in `torch.nn.Linear`'s layout, `(out, in)` matrices (transposed
    views are read as they are): in-projection weight and bias, output
    projection weight and bias, first LayerNorm's scale and offset,
    feed-forward weights and biases, second LayerNorm's. No mask: every
    token attends to every token. Fallback, where a
    release drops the kernel or changes it (`encoder_layer_works` probes
    once): None, and the caller runs its own layers.
    """
    if not encoder_layer_works():
        return None
    import torch  # only reached under the torch backend

    (qkv_w, qkv_b, out_w, out_b, norm1_w, norm1_b, ffn1_w, ffn1_b, ffn2_w,
     ffn2_b, norm2_w, norm2_b) = weights
    return torch._transformer_encoder_layer_fwd(
        inputs, inputs.shape[-1], num_heads, qkv_w, qkv_b, out_w, out_b,
        use_gelu, norm_first, epsilon, norm1_w, norm1_b, norm2_w, norm2_b,
        ffn1_w, ffn1_b, ffn2_w, ffn2_b, None, None)


@functools.cache
def encoder_layer_works():
    """Whether PyTorch's fused encoder kernel exists and computes a post-
    norm GELU layer as its separate ops do."""
    import torch  # only reached under the torch backend

    if not hasattr(torch, "_transformer_encoder_layer_fwd"):
        return False
    functional = torch.nn.functional
    generator = torch.Generator().manual_seed(0)
    hidden, heads, inner = 8, 2, 16
    x = torch.randn(2, 3, hidden, generator=generator)
    shapes = ((3 * hidden, hidden), (3 * hidden,), (hidden, hidden),
              (hidden,), (hidden,), (hidden,), (inner, hidden), (inner,),
              (hidden, inner), (hidden,), (hidden,), (hidden,))
    weights = [torch.randn(shape, generator=generator) for shape in shapes]
    (qkv_w, qkv_b, out_w, out_b, norm1_w, norm1_b, ffn1_w, ffn1_b, ffn2_w,
     ffn2_b, norm2_w, norm2_b) = weights
    with torch.no_grad():
        q, k, v = functional.linear(x, qkv_w, qkv_b).view(
            2, 3, 3, heads, hidden // heads).transpose(1, 3).unbind(2)
        attended = functional.scaled_dot_product_attention(
            q, k, v).transpose(1, 2).reshape(2, 3, hidden)
        h = functional.layer_norm(
            x + functional.linear(attended, out_w, out_b), (hidden,),
            norm1_w, norm1_b, 1e-5)
        expected = functional.layer_norm(
            h + functional.linear(functional.gelu(functional.linear(
                h, ffn1_w, ffn1_b)), ffn2_w, ffn2_b),
            (hidden,), norm2_w, norm2_b, 1e-5)
        try:
            out = torch._transformer_encoder_layer_fwd(
                x, hidden, heads, qkv_w, qkv_b, out_w, out_b, True, False,
                1e-5, norm1_w, norm1_b, norm2_w, norm2_b, ffn1_w, ffn1_b,
                ffn2_w, ffn2_b, None, None)
        except (RuntimeError, TypeError):
            return False
    return bool(torch.allclose(out, expected, atol=1e-4, rtol=1e-4))


def int_mm(rows, kernel):
    """`rows @ kernel` of 2-D int8 tensors in int32: the private
    `torch._int_mm`, or, where it is gone, the same product through int32
    (`torch.matmul`; exact, several times slower)."""
    import torch  # only reached under the torch backend

    if hasattr(torch, "_int_mm"):
        return torch._int_mm(rows, kernel)
    return torch.matmul(rows.to(torch.int32), kernel.to(torch.int32))


def foreach(name):
    """PyTorch's multi-tensor op `torch._foreach_<name>` (one kernel over
    a list of tensors, as `torch.optim` uses), e.g. `foreach("mul_")`.

    Its arguments are the op's: lists of tensors, one per tensor, or a
    scalar for all. Fallback, where the op is gone: the per-tensor method
    of the same name (`tensor.mul_(...)`) in a loop.
    """
    import torch  # only reached under the torch backend

    op = getattr(torch, f"_foreach_{name}", None)
    if op is not None:
        return op

    def per_tensor(tensors, *args, **kwargs):
        return [getattr(tensor, name)(
                    *(arg[i] if isinstance(arg, (list, tuple)) else arg
                      for arg in args), **kwargs)
                for i, tensor in enumerate(tensors)]

    return per_tensor
