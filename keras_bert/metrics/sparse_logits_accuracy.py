import keras
from keras import ops

from keras_bert.losses.sparse_logits_crossentropy import sparse_labels


@keras.saving.register_keras_serializable(package="keras_bert")
class SparseLogitsAccuracy(keras.metrics.MeanMetricWrapper):
    """How often the label's logit is the single highest, for a large
    vocabulary.

    `keras.metrics.SparseCategoricalAccuracy` takes the argmax over the
    vocabulary, a reduction that carries the index along and that XLA
    runs as a scalar loop on CPUs, a sizeable part of a small model's step
    (docs/pretraining.md, "The masked-LM loss and accuracy"). This metric
    gathers the label's logit and counts
    the logits at or above it, one vectorized pass: a hit when that count
    is 1 (on PyTorch, where the top 2 is the faster pass: when the label's
    logit is the first of the top 2 and the second is lower). The same
    value as the argmax's except on an exact tie for the highest logit,
    which counts as a miss here (the argmax would count it a hit when the
    label is the first of the tied ids), so a model whose logits are all
    equal, or all infinite, scores 0 rather than its share of label 0.

    Labels must be valid ids; positions that do not count take a sample
    weight of 0 (`BertPretrainer` compiles this as a weighted metric).

    Args:
        name: str. Name of the metric.
        dtype: str or None. Dtype of the metric's result.

    Example:
    >>> import numpy as np
    >>> metric = SparseLogitsAccuracy()
    >>> metric.update_state(np.array([0, 1, 2]),
    ...                     np.array([[3.0, 1.0, 0.0], [2.0, 1.0, 0.0],
    ...                               [1.0, 1.0, 1.0]]))
    >>> round(float(metric.result()), 4)
    0.3333
    """

    def __init__(self, name="accuracy", dtype=None):
        super().__init__(fn=top_logit_hits, name=name, dtype=dtype)

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype}


def top_logit_hits(y_true, y_pred):
    """1.0 where the label's logit is strictly above every other, else 0.0."""
    y_pred = ops.convert_to_tensor(y_pred)
    labels = sparse_labels(y_true, y_pred, "SparseLogitsAccuracy")
    picked = ops.take_along_axis(y_pred, ops.expand_dims(labels, -1),
                                 axis=-1)
    if keras.config.backend() == "torch":
        # PyTorch's top 2 is one fast pass, several times faster than
        # summing a comparison; XLA sorts for top_k, so the other backends
        # count.
        top_two = ops.top_k(y_pred, 2, sorted=True)[0]
        hits = ops.logical_and(
            ops.greater_equal(ops.squeeze(picked, -1), top_two[..., 0]),
            ops.less(top_two[..., 1], top_two[..., 0]))
    else:
        at_or_above = ops.sum(
            ops.cast(ops.greater_equal(y_pred, picked), "int32"), axis=-1)
        hits = ops.equal(at_or_above, 1)
    return ops.cast(hits, "float32")
