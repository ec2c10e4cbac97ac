"""An independent NumPy forward pass of BERT, written from the paper.

Tests compare keras_bert against it using the model's own weights, so a
wrong sum, a pre/post-norm mix-up or a leaking mask shows as a mismatch.
`causal=True` runs the same weights with a left-to-right mask, to show the
contract difference between BERT and a causal encoder.
"""

import math

import numpy as np
from scipy.special import erf


def gelu(x):
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def layer_norm(x, gamma, beta, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def weights_of(layer):
    """A layer's weights as a {short path: float64 array} dict."""
    prefix = layer.path + "/"
    return {
        w.path[len(prefix):]: np.asarray(w.numpy() if hasattr(w, "numpy")
                                         else w, "float64")
        for w in layer.weights
    }


def embeddings(layer, token_ids, segment_ids):
    w = {k: v for k, v in weights_of(layer).items()}
    length = token_ids.shape[1]
    x = (
        w["token_embedding/embeddings"][token_ids]
        + w["segment_embedding/embeddings"][segment_ids]
        + w["position_embeddings"][:length][None]
    )
    return layer_norm(x, w["layer_norm/gamma"], w["layer_norm/beta"],
                      layer.layer_norm_epsilon)


def encoder_block(block, x, padding_mask, causal=False):
    w = weights_of(block)
    heads, hidden = block.num_heads, block.hidden_dim
    head_dim = hidden // heads
    batch, length, _ = x.shape

    def norm(name, value):
        return layer_norm(value, w[f"{name}/gamma"], w[f"{name}/beta"],
                          block.layer_norm_epsilon)

    h = norm("attention_layer_norm", x) if block.normalize_first else x
    # Kernel (hidden, 3, hidden), bias (3, hidden): q, k, v on axis 2.
    qkv = np.einsum("btd,dkh->btkh", h, w["attention/query_key_value/kernel"]
                    ) + w["attention/query_key_value/bias"]
    q, k, v = (qkv[:, :, i].reshape(batch, length, heads, head_dim)
               for i in range(3))
    logits = np.einsum("btnh,bsnh->bnts", q, k) / math.sqrt(head_dim)
    allowed = padding_mask.astype(bool)[:, None, None, :]
    if causal:
        allowed = allowed & np.tril(np.ones((length, length), bool))
    logits = np.where(allowed, logits, -1e9)
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    attended = np.einsum("bnts,bsnh->btnh", probs, v).reshape(
        batch, length, hidden)
    attended = attended @ w["attention/output_dense/kernel"] + w[
        "attention/output_dense/bias"]

    x = x + attended
    if not block.normalize_first:
        x = norm("attention_layer_norm", x)
    h = norm("output_layer_norm", x) if block.normalize_first else x
    h = gelu(h @ w["intermediate_dense/kernel"] + w["intermediate_dense/bias"])
    h = h @ w["output_dense/kernel"] + w["output_dense/bias"]
    x = x + h
    if not block.normalize_first:
        x = norm("output_layer_norm", x)
    return x


def backbone(model, inputs, causal=False):
    """Returns (sequence_output, pooled_output) for a BertBackbone."""
    ids = np.asarray(inputs["token_ids"])
    mask = np.asarray(inputs["padding_mask"])
    x = embeddings(model.embeddings, ids, np.asarray(inputs["segment_ids"]))
    for block in model.transformer_layers:
        x = encoder_block(block, x, mask, causal=causal)
    pooler = weights_of(model.pooler)
    pooled = np.tanh(x[:, 0] @ pooler["kernel"] + pooler["bias"])
    return x, pooled
