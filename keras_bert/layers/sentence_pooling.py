import keras
from keras import ops

POOLING_MODES = ("mean", "cls", "max")


@keras.saving.register_keras_serializable(package="keras_bert")
class SentencePooling(keras.layers.Layer):
    """Token vectors -> one sentence vector: mean, [CLS] or max pooling.

    `"mean"` averages the vectors of the real tokens (`padding_mask` 1,
    `[CLS]` and `[SEP]` included, as sentence-transformers does), `"cls"`
    takes the first position and `"max"` the element-wise maximum over the
    real tokens. With `normalize`, the vector is divided by its L2 norm
    (at least 1e-12), so that a dot product is the cosine similarity.

    The sums run in float32 whatever the layer's dtype policy. A row with
    no real token (an all-zero `padding_mask`) pools to the zero vector,
    and stays zero when normalized.

    Shared rows (several texts in one row, see `BertTextEmbedder.encode`):
    with `texts_per_row=K`, `padding_mask` holds each token's text number,
    1 to K (0 padding), and each text is pooled on its own: the output is
    `(batch, K, dim)`, a text number no token has giving the zero vector.

    Args:
        mode: str. "mean", "cls" or "max".
        normalize: bool. L2-normalize the pooled vector.

    Example:
    >>> import numpy as np
    >>> pooling = SentencePooling(mode="mean", normalize=False)
    >>> tokens = np.array([[[1.0, 2.0], [3.0, 4.0], [9.0, 9.0]]])
    >>> keras.ops.convert_to_numpy(pooling(tokens, np.array([[1, 1, 0]])))
    array([[2., 3.]], dtype=float32)
    """

    def __init__(self, mode="mean", normalize=True, **kwargs):
        super().__init__(**kwargs)
        if mode not in POOLING_MODES:
            raise ValueError(
                f"SentencePooling: mode must be one of {POOLING_MODES}; got "
                f"{mode!r}."
            )
        self.mode = mode
        self.normalize = normalize

    def call(self, sequence_output, padding_mask, texts_per_row=None):
        tokens = ops.cast(sequence_output, "float32")
        if texts_per_row is not None:
            pooled = self._pool_shared(tokens, padding_mask, texts_per_row)
            return ops.cast(self._normalized(pooled), self.compute_dtype)
        mask = ops.cast(padding_mask, "float32")[:, :, None]
        if self.mode == "cls":
            pooled = tokens[:, 0, :]
        elif self.mode == "mean":
            # At least 1e-9 tokens, as sentence-transformers clamps it.
            pooled = ops.sum(tokens * mask, axis=1) / ops.maximum(
                ops.sum(mask, axis=1), 1e-9)
        else:
            pooled = ops.max(ops.where(mask > 0, tokens, -float("inf")),
                             axis=1)
            pooled = ops.where(ops.max(mask, axis=1) > 0, pooled, 0.0)
        return ops.cast(self._normalized(pooled), self.compute_dtype)

    def _normalized(self, pooled):
        if not self.normalize:
            return pooled
        norm = ops.sqrt(ops.sum(ops.square(pooled), axis=-1, keepdims=True))
        return pooled / ops.maximum(norm, 1e-12)

    def _pool_shared(self, tokens, text_numbers, texts_per_row):
        # (batch, length, K): which text each token belongs to.
        members = ops.cast(
            ops.expand_dims(text_numbers, -1)
            == ops.arange(1, texts_per_row + 1, dtype=text_numbers.dtype),
            "float32")
        if self.mode == "max":
            columns = [
                ops.max(ops.where(members[:, :, k, None] > 0, tokens,
                                  -float("inf")), axis=1)
                for k in range(texts_per_row)]
            pooled = ops.stack(columns, axis=1)
            return ops.where(ops.max(members, axis=1)[:, :, None] > 0,
                             pooled, 0.0)
        if self.mode == "cls":
            # A text's first token is where its running count reaches 1.
            members = members * ops.cast(
                ops.cumsum(members, axis=1) == 1.0, "float32")
        pooled = ops.einsum("blk,bld->bkd", members, tokens)
        if self.mode == "mean":
            pooled = pooled / ops.maximum(
                ops.sum(members, axis=1)[:, :, None], 1e-9)
        return pooled

    def compute_output_shape(self, sequence_output_shape,
                             padding_mask_shape=None, texts_per_row=None):
        if texts_per_row is not None:
            return (sequence_output_shape[0], texts_per_row,
                    sequence_output_shape[-1])
        return (sequence_output_shape[0], sequence_output_shape[-1])

    def get_config(self):
        config = super().get_config()
        config.update(mode=self.mode, normalize=self.normalize)
        return config
