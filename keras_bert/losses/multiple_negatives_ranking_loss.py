import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert")
class MultipleNegativesRankingLoss(keras.losses.Loss):
    """In-batch negatives (InfoNCE) loss for (anchor, positive[, negatives]).

    Each anchor (a query) is scored against every candidate of the batch:
    all the positives, then any hard negatives. The scores are
    `scale * cosine(anchor, candidate)` (or the dot product), and the loss
    is the softmax cross-entropy of the anchor's own positive, so the other
    rows' positives serve as negatives. This is sentence-transformers'
    `MultipleNegativesRankingLoss` with its defaults (`scale=20`, cosine,
    query to document only).

    Inputs: `y_pred` of shape `(batch, columns, dim)`, column 0 the anchors,
    column 1 their positives and columns 2.. hard negatives (what
    `BertTextEmbedder` returns for a tuple of texts); `y_true` int
    `(batch,)`, the candidate index of each anchor's positive, which is
    `0, 1, ..., batch - 1` with the candidates ordered as above (what
    `BertTextEmbedderPreprocessor` supplies).

    Args:
        scale: float. Multiplies the similarities: the inverse temperature
            (20 is a temperature of 0.05).
        similarity: str. "cosine" or "dot".
        name: str. Name of the loss.
        reduction: str. Keras reduction over the anchors.

    Example:
    >>> import numpy as np
    >>> loss = MultipleNegativesRankingLoss(scale=20.0)
    >>> pairs = np.array([[[1.0, 0.0], [1.0, 0.1]],
    ...                   [[0.0, 1.0], [0.1, 1.0]]])  # (batch, 2, dim)
    >>> float(loss(np.array([0, 1]), pairs)) < 0.01
    True
    """

    def __init__(self, scale=20.0, similarity="cosine",
                 name="multiple_negatives_ranking",
                 reduction="sum_over_batch_size", **kwargs):
        super().__init__(name=name, reduction=reduction, **kwargs)
        if not scale > 0:
            raise ValueError(f"scale must be > 0; got {scale!r}.")
        if similarity not in ("cosine", "dot"):
            raise ValueError(
                f"similarity must be 'cosine' or 'dot'; got {similarity!r}."
            )
        self.scale = scale
        self.similarity = similarity

    def call(self, y_true, y_pred):
        if len(y_pred.shape) != 3 or (y_pred.shape[1] is not None
                                      and y_pred.shape[1] < 2):
            raise ValueError(
                "MultipleNegativesRankingLoss takes y_pred of shape (batch, "
                "columns >= 2, dim): anchors, positives, hard negatives; got "
                f"{tuple(y_pred.shape)}. Fit a BertTextEmbedder on tuples of "
                "texts, e.g. (queries, passages)."
            )
        anchors = y_pred[:, 0, :]
        # Column-major, so the first `batch` candidates are the positives.
        candidates = ops.reshape(ops.transpose(y_pred[:, 1:, :], (1, 0, 2)),
                                 (-1, ops.shape(y_pred)[-1]))
        if self.similarity == "cosine":
            anchors = _unit(anchors)
            candidates = _unit(candidates)
        scores = self.scale * ops.matmul(anchors, ops.transpose(candidates))
        return keras.losses.sparse_categorical_crossentropy(
            ops.cast(y_true, "int32"), scores, from_logits=True)

    def get_config(self):
        config = super().get_config()
        config.update(scale=self.scale, similarity=self.similarity)
        return config


def _unit(vectors):
    norm = ops.sqrt(ops.sum(ops.square(vectors), axis=-1, keepdims=True))
    return vectors / ops.maximum(norm, 1e-12)
