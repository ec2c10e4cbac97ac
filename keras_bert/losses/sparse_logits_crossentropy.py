import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert")
class SparseLogitsCrossentropy(keras.losses.Loss):
    """Softmax cross-entropy of integer labels, for a large vocabulary.

    The same value as `keras.losses.SparseCategoricalCrossentropy(
    from_logits=True)`, computed as `logsumexp(logits) - logits[label]`:
    the label's logit is gathered rather than picked by a one-hot matrix of
    the whole vocabulary, which Keras builds on JAX (and XLA then walks
    over every logit again in the backward pass). `BertPretrainer`'s
    masked-LM loss: with `SparseLogitsAccuracy`, the training step of a
    small model with a large vocabulary is faster on JAX and TensorFlow
    (docs/pretraining.md, "The masked-LM loss and accuracy"); on PyTorch
    this loss runs at `cross_entropy`'s speed.

    Labels must be valid ids (`0 <= label < vocabulary`): positions that do
    not count (padding) take any valid id and a sample weight of 0, as
    `BertMaskedLMPreprocessor` and the pretraining stream give them.

    Args:
        name: str. Name of the loss.
        reduction: str. Keras reduction over the positions, e.g.
            "sum_over_batch_size" or "mean_with_sample_weight" (the mean
            over the positions whose weight is not 0).
        dtype: str or None. Dtype the loss is computed in; None for
            Keras' float type (float32 also under mixed precision).

    Example:
    >>> import numpy as np
    >>> loss = SparseLogitsCrossentropy()
    >>> logits = np.array([[2.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    >>> round(float(loss(np.array([0, 1]), logits)), 4)
    0.6691
    """

    def __init__(self, name="sparse_logits_crossentropy",
                 reduction="sum_over_batch_size", dtype=None):
        super().__init__(name=name, reduction=reduction, dtype=dtype)

    def call(self, y_true, y_pred):
        labels = sparse_labels(y_true, y_pred, "SparseLogitsCrossentropy")
        logits = ops.cast(y_pred, self.dtype)
        picked = ops.take_along_axis(logits, ops.expand_dims(labels, -1),
                                     axis=-1)
        return ops.logsumexp(logits, axis=-1) - ops.squeeze(picked, -1)


def sparse_labels(y_true, y_pred, owner):
    """int32 labels of shape `y_pred.shape[:-1]`; a trailing axis of 1, as
    Keras' sparse losses accept, is dropped."""
    labels = ops.cast(y_true, "int32")
    if len(labels.shape) == len(y_pred.shape) and labels.shape[-1] == 1:
        labels = ops.squeeze(labels, -1)
    if len(labels.shape) != len(y_pred.shape) - 1 or any(
            a is not None and b is not None and a != b
            for a, b in zip(labels.shape, y_pred.shape[:-1])):
        raise ValueError(
            f"{owner} takes labels of shape logits.shape[:-1]: got labels "
            f"{tuple(y_true.shape)} for logits {tuple(y_pred.shape)}.")
    return labels
