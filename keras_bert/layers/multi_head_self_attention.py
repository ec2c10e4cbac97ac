import math

import keras
from keras import ops

from keras_bert import fused_ops
from keras_bert._compat.sublayer_call import DirectSublayerCall
from keras_bert.layers.bert_initializer import BertInitializer
from keras_bert.layers.fused_dense import FusedDense
from keras_bert.layers.fused_query_key_value import FusedQueryKeyValue


@keras.saving.register_keras_serializable(package="keras_bert")
class MultiHeadSelfAttention(DirectSublayerCall, keras.layers.Layer):
    """Bidirectional multi-head self-attention with a fused QKV projection.

    The query, key and value projections are one `(hidden, 3, hidden)`
    kernel (`FusedQueryKeyValue`): one large GEMM instead of three smaller
    ones, laid out so that a model-parallel split keeps whole heads. At
    inference, attention goes through the backend's fused kernel
    (`keras_bert.fused_ops.dot_product_attention`: SDPA on PyTorch),
    except for float32 under JAX and TensorFlow, where an explicit
    head-major form that XLA fuses better is used (see
    `_explicit_is_faster`). With attention-probability dropout
    active (training) or `return_attention_scores`, the explicit form
    computes the normalized probabilities, as the original BERT does. The
    softmax is always computed in float32.

    Padded keys (`padding_mask == 0`) get a large finite negative logit, so
    they receive exactly zero weight and a query whose keys are all padding
    still gets finite output. An `attention_mask` `(batch, queries, keys)`
    (True: may attend) restricts each query further, e.g. to its own text
    when several texts share one row.

    Args:
        num_heads: int. Number of attention heads.
        hidden_dim: int. Model width; must be divisible by `num_heads`.
        dropout: float. Dropout on the attention probabilities (training).
        initializer_range: float. Stddev of the truncated-normal initializer.

    Example:
    >>> import numpy as np
    >>> layer = MultiHeadSelfAttention(num_heads=2, hidden_dim=8)
    >>> x = np.random.rand(1, 5, 8).astype("float32")
    >>> tuple(layer(x, padding_mask=np.array([[1, 1, 1, 0, 0]])).shape)
    (1, 5, 8)
    """

    def __init__(
        self,
        num_heads,
        hidden_dim,
        dropout=0.1,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if hidden_dim % num_heads:
            raise ValueError(
                f"hidden_dim={hidden_dim} is not divisible by "
                f"num_heads={num_heads}."
            )
        self.num_heads = num_heads
        self.hidden_dim = hidden_dim
        self.dropout = dropout
        self.initializer_range = initializer_range
        self.head_dim = hidden_dim // num_heads

        initializer = BertInitializer(initializer_range)
        self.query_key_value = FusedQueryKeyValue(
            hidden_dim,
            kernel_initializer=initializer,
            dtype=self.dtype_policy,
            name="query_key_value",
        )
        self.output_dense = FusedDense(
            hidden_dim,
            kernel_initializer=initializer,
            dtype=self.dtype_policy,
            name="output_dense",
        )
        self.dropout_layer = keras.layers.Dropout(
            dropout, dtype=self.dtype_policy, name="attention_dropout"
        )

    def build(self, inputs_shape, padding_mask_shape=None,
              attention_mask_shape=None):
        self.query_key_value.build(inputs_shape)
        self.output_dense.build(tuple(inputs_shape[:-1]) + (self.hidden_dim,))
        self.built = True

    def call(
        self,
        inputs,
        padding_mask=None,
        attention_mask=None,
        training=None,
        return_attention_scores=False,
    ):
        batch, length = ops.shape(inputs)[0], ops.shape(inputs)[1]
        qkv = fused_ops.reshape(
            self.query_key_value(self._projection_input(inputs)),
            (batch, length, 3, self.num_heads, self.head_dim),
        )
        explicit = return_attention_scores or (
            training and self.dropout > 0
        )
        scores = None
        mask = _combined_mask(padding_mask, attention_mask)
        if explicit or self._explicit_is_faster():
            output, scores = self._explicit_attention(
                qkv, mask, training, need_probs=explicit
            )
        else:
            query, key, value = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
            output = fused_ops.dot_product_attention(
                query, key, value, mask, scale=1.0 / math.sqrt(self.head_dim)
            )
        output = fused_ops.reshape(output, (batch, length, self.hidden_dim))
        output = self.output_dense(output)
        if return_attention_scores:
            return output, scores
        return output

    def _projection_input(self, inputs):
        # Keras' quantized einsum on TensorFlow runs in int8 only when the
        # input's middle axis has a static size, and multiplies in float
        # otherwise: under a SavedModel's signature (length unknown) that
        # made every layer's QKV GEMM float, and the served int8 model
        # slower than in-process (docs/performance.md, "Lower precision").
        # One token per row, (batch * length, 1, hidden), is the same GEMM
        # with a static 1 there. Float models keep their shape: XLA adds a
        # copy per layer for the reshaped output.
        if (keras.config.backend() == "tensorflow"
                and self.query_key_value.quantization_mode is not None):
            return ops.reshape(inputs, (-1, 1, self.hidden_dim))
        return inputs

    def _explicit_is_faster(self):
        # Measured on CPU (docs/performance.md, "Where the time goes"):
        # under JAX, XLA fuses the explicit form below into fewer passes
        # than `jax.nn.dot_product_attention`'s grouped layout (no copy of
        # the probabilities, no separate normalization pass). TensorFlow is
        # even, and runs the same program as JAX this way. On torch the
        # SDPA kernel beats explicit eager ops. Half precision keeps the
        # fused op, which can reach cuDNN flash attention on GPUs.
        return (keras.config.backend() in ("jax", "tensorflow")
                and self.compute_dtype == "float32")

    def _explicit_attention(self, qkv, mask, training, need_probs):
        # (3, batch, heads, length, head_dim): each head's rows contiguous,
        # so both products are plain batched matmuls.
        qkv = ops.transpose(qkv, (2, 0, 3, 1, 4))
        query, key, value = qkv[0], qkv[1], qkv[2]
        scale = 1.0 / math.sqrt(self.head_dim)
        logits = ops.matmul(
            ops.cast(query, "float32") * scale,
            ops.transpose(ops.cast(key, "float32"), (0, 1, 3, 2)),
        )
        if mask is not None:
            # Finite, so an all-padding row softmaxes to uniform, not NaN.
            # A select, not an added bias: XLA shares one bias across all
            # layers and materializes it at full (batch, heads, length,
            # length) size, slower at long lengths.
            logits = ops.where(mask, logits, -1e9)
        if need_probs:
            probs = ops.softmax(logits, axis=-1)
            dropped = self.dropout_layer(
                ops.cast(probs, self.compute_dtype), training=training
            )
            output = ops.matmul(dropped, value)
        else:
            # Normalize after PV: divides (length, head_dim) per head
            # instead of (length, length), one pass less over the logits.
            probs = None
            weights = ops.exp(
                logits - ops.max(logits, axis=-1, keepdims=True)
            )
            total = ops.sum(weights, axis=-1, keepdims=True)
            output = ops.matmul(ops.cast(weights, self.compute_dtype), value)
            output = output / ops.cast(total, self.compute_dtype)
        # Back to (batch, length, heads, head_dim) for the output GEMM.
        return ops.transpose(output, (0, 2, 1, 3)), probs

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "hidden_dim": self.hidden_dim,
                "dropout": self.dropout,
                "initializer_range": self.initializer_range,
            }
        )
        return config


def _combined_mask(padding_mask, attention_mask):
    """A bool mask that broadcasts to (batch, heads, queries, keys), or None."""
    mask = None
    if padding_mask is not None:
        # (batch, 1, 1, keys): one key mask for every head and query.
        mask = ops.cast(padding_mask, "bool")[:, None, None, :]
    if attention_mask is not None:
        allowed = ops.cast(attention_mask, "bool")[:, None, :, :]
        mask = allowed if mask is None else ops.logical_and(mask, allowed)
    return mask
