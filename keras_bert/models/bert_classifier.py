import keras
import numpy as np

from keras_bert.models.finetuning_task import FinetuningTask
from keras_bert.models.finetuning_task import float32_logits
from keras_bert.models.finetuning_task import head_layers
from keras_bert.models.label_names import checked_label_names
from keras_bert.models.label_names import named


@keras.saving.register_keras_serializable(package="keras_bert")
class BertClassifier(FinetuningTask):
    """Sentence or sentence-pair classification (or regression) with BERT.

    A linear head on the pooled [CLS] output, after dropout, as in the
    paper's GLUE setup. Pairs are packed as `[CLS] A [SEP] B [SEP]` by the
    preprocessor. `num_classes=1` makes a regressor (STS-B style): one
    output per example and a mean-squared-error loss.

    Inputs: the backbone's dict (`token_ids`, `segment_ids`,
    `padding_mask`), or raw strings / `(first, second)` string pairs when a
    `preprocessor` is attached. Output: logits `(batch, num_classes)`.

    Args:
        backbone: `keras_bert.BertBackbone`.
        num_classes: int. Number of classes; 1 for regression.
        dropout: float. Dropout on the pooled output before the head.
        preprocessor: optional `keras_bert.BertPreprocessor` (strings in,
            packed tensors out), used by `fit`/`evaluate`/`predict`.
        label_names: optional list of str, one name per class in id
            order (`from_preset` takes a Hugging Face checkpoint's
            `id2label`); `predict_labels` answers with them and exports
            serve them.

    Example:
    >>> import numpy as np
    >>> backbone = keras_bert.BertBackbone(vocabulary_size=100, num_layers=2,
    ...     num_heads=2, hidden_dim=16, intermediate_dim=32)
    >>> model = BertClassifier(backbone, num_classes=3)
    >>> logits = model({"token_ids": np.array([[2, 8, 9, 3]]),
    ...                 "segment_ids": np.zeros((1, 4), "int32"),
    ...                 "padding_mask": np.ones((1, 4), "int32")})
    >>> tuple(logits.shape)
    (1, 3)
    """

    # One output per example: `predict` on raw text pads each batch only
    # to its length bucket (`TaskMixin.predict`), `fit` and `evaluate` cut
    # the padding no row of a batch uses.
    predicts_bucketed = True
    trims_padding = "inputs"

    def __init__(self, backbone, num_classes, dropout=0.1, preprocessor=None,
                 label_names=None, **kwargs):
        if num_classes < 1:
            raise ValueError(
                f"BertClassifier: num_classes must be >= 1 (1 for "
                f"regression), got {num_classes}."
            )
        label_names = checked_label_names(
            None if num_classes == 1 else label_names, num_classes,
            "BertClassifier")
        # === Layers ===
        head_dropout, head = head_layers(
            backbone, num_classes, dropout, name="classifier"
        )
        # === Functional model ===
        inputs = backbone.input
        pooled = backbone(inputs)["pooled_output"]
        outputs = float32_logits(head(head_dropout(pooled)))
        super().__init__(
            inputs=inputs,
            outputs=outputs,
            backbone=backbone,
            preprocessor=preprocessor,
            **kwargs,
        )
        # === Config ===
        self.num_classes = num_classes
        self.dropout = dropout
        self.label_names = label_names
        self.classifier_head = head
        # === Default compilation ===
        self.compile()

    def default_loss(self):
        if self.num_classes == 1:
            return keras.losses.MeanSquaredError()
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def default_metrics(self):
        if self.num_classes == 1:
            return [keras.metrics.MeanAbsoluteError(name="mae")]
        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]

    def predict_labels(self, x, batch_size=None, **kwargs):
        """The predicted class of each input: its name, or its id when the
        model has no `label_names`.

        Args:
            x: what `predict` takes (strings or pairs with a preprocessor).
            batch_size: int or None. Inputs per batch.
            **kwargs: other `predict` arguments.

        Returns:
            list of str (or int), one per input.

        Example:
        >>> backbone = keras_bert.BertBackbone(vocabulary_size=100,
        ...     num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16)
        >>> model = BertClassifier(backbone, num_classes=2,
        ...                        label_names=["negative", "positive"])
        >>> x = {"token_ids": np.array([[2, 8, 3]]),
        ...      "segment_ids": np.zeros((1, 3), "int32"),
        ...      "padding_mask": np.ones((1, 3), "int32")}
        >>> model.predict_labels(x, verbose=0)[0] in ("negative", "positive")
        True
        """
        if self.num_classes == 1:
            raise ValueError("predict_labels: this BertClassifier is a "
                             "regressor (num_classes=1); use predict.")
        logits = self.predict(x, batch_size=batch_size, **kwargs)
        return named(np.argmax(logits, axis=-1), self.label_names)

    def get_config(self):
        config = super().get_config()
        config.update(num_classes=self.num_classes, dropout=self.dropout,
                      label_names=self.label_names)
        return config
