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

    def call(self, sequence_output, padding_mask):
        tokens = ops.cast(sequence_output, "float32")
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
        if self.normalize:
            norm = ops.sqrt(ops.sum(ops.square(pooled), axis=-1,
                                    keepdims=True))
            pooled = pooled / ops.maximum(norm, 1e-12)
        return ops.cast(pooled, self.compute_dtype)

    def compute_output_shape(self, sequence_output_shape,
                             padding_mask_shape=None):
        return (sequence_output_shape[0], sequence_output_shape[-1])

    def get_config(self):
        config = super().get_config()
        config.update(mode=self.mode, normalize=self.normalize)
        return config
