import math

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert")
class MultiHeadSelfAttention(keras.layers.Layer):
    """Bidirectional multi-head self-attention with a fused QKV projection.

    The query, key and value projections are one `(hidden, 3 * hidden)`
    kernel: one large GEMM instead of three smaller ones. Attention itself
    goes through `keras.ops.dot_product_attention` (the backend's fused
    kernel) unless attention-probability dropout is active, in which case an
    explicit softmax path applies the dropout the original BERT uses in
    training. Both paths compute the softmax in float32.

    Padded keys (`padding_mask == 0`) get a large finite negative logit, so
    they receive exactly zero weight and a query whose keys are all padding
    still gets finite output.

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

        initializer = keras.initializers.TruncatedNormal(
            stddev=initializer_range
        )
        self.query_key_value = keras.layers.Dense(
            3 * hidden_dim,
            kernel_initializer=initializer,
            dtype=self.dtype_policy,
            name="query_key_value",
        )
        self.output_dense = keras.layers.Dense(
            hidden_dim,
            kernel_initializer=initializer,
            dtype=self.dtype_policy,
            name="output_dense",
        )
        self.dropout_layer = keras.layers.Dropout(
            dropout, dtype=self.dtype_policy, name="attention_dropout"
        )

    def build(self, inputs_shape, padding_mask_shape=None):
        self.query_key_value.build(inputs_shape)
        self.output_dense.build(tuple(inputs_shape[:-1]) + (self.hidden_dim,))
        self.built = True

    def call(
        self,
        inputs,
        padding_mask=None,
        training=None,
        return_attention_scores=False,
    ):
        batch, length = ops.shape(inputs)[0], ops.shape(inputs)[1]
        qkv = self.query_key_value(inputs)
        qkv = ops.reshape(
            qkv, (batch, length, 3, self.num_heads, self.head_dim)
        )
        query, key, value = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]

        # (batch, 1, 1, keys): the same key mask for every head and query.
        mask = None
        if padding_mask is not None:
            mask = ops.cast(padding_mask, "bool")[:, None, None, :]

        explicit = return_attention_scores or (
            training and self.dropout > 0
        )
        if explicit:
            output, scores = self._explicit_attention(
                query, key, value, mask, training
            )
        else:
            output = ops.dot_product_attention(
                query, key, value, mask=mask,
                scale=1.0 / math.sqrt(self.head_dim),
            )
        output = ops.reshape(output, (batch, length, self.hidden_dim))
        output = self.output_dense(output)
        if return_attention_scores:
            return output, scores
        return output

    def _explicit_attention(self, query, key, value, mask, training):
        logits = ops.einsum(
            "btnh,bsnh->bnts",
            ops.cast(query, "float32"),
            ops.cast(key, "float32"),
        ) / math.sqrt(self.head_dim)
        if mask is not None:
            # Finite, so an all-padding row softmaxes to uniform, not NaN.
            logits = ops.where(mask, logits, -1e9)
        probs = ops.softmax(logits, axis=-1)
        dropped = self.dropout_layer(
            ops.cast(probs, self.compute_dtype), training=training
        )
        output = ops.einsum("bnts,bsnh->btnh", dropped, value)
        return output, probs

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
