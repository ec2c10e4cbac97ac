import keras
import numpy as np

from keras_bert.labels import IGNORE_LABEL
from keras_bert.models.finetuning_task import FinetuningTask
from keras_bert.models.finetuning_task import float32_logits
from keras_bert.models.finetuning_task import head_layers
from keras_bert.models.label_names import checked_label_names
from keras_bert.models.label_names import named


@keras.saving.register_keras_serializable(package="keras_bert")
class BertTokenClassifier(FinetuningTask):
    """Token tagging (e.g. named entities) with a per-token linear head.

    Words are labelled on their first WordPiece only, the paper's choice;
    the other positions carry the label `-100` and are left out of the
    loss (and, through the preprocessor's sample weights, the metrics).
    `predict_words` maps the token predictions back to one label per word.

    Inputs: the backbone's dict, or lists of words when a
    `BertTokenClassifierPreprocessor` is attached. Output: logits
    `(batch, sequence_length, num_classes)`.

    Args:
        backbone: `keras_bert.BertBackbone`.
        num_classes: int. Number of tags.
        dropout: float. Dropout on the sequence output before the head.
        preprocessor: optional
            `keras_bert.preprocessing.tasks.BertTokenClassifierPreprocessor`.
        label_names: optional list of str, one tag name per class in id
            order (`from_preset` takes a Hugging Face checkpoint's
            `id2label`); `predict_labels` answers with them and exports
            serve them.

    Example:
    >>> import numpy as np
    >>> backbone = keras_bert.BertBackbone(vocabulary_size=100, num_layers=2,
    ...     num_heads=2, hidden_dim=16, intermediate_dim=32)
    >>> model = BertTokenClassifier(backbone, num_classes=9)
    >>> logits = model({"token_ids": np.array([[2, 8, 9, 3]]),
    ...                 "segment_ids": np.zeros((1, 4), "int32"),
    ...                 "padding_mask": np.ones((1, 4), "int32")})
    >>> tuple(logits.shape)
    (1, 4, 9)
    """

    # Each row's tags depend on its own tokens only: `predict` on raw words
    # pads each batch only to its length bucket (`TaskMixin.predict`); the
    # logits of padded positions are then 0. `fit` and `evaluate` cut the
    # padding no row of a batch uses, from the tags and weights too (the
    # loss averages over the labelled positions, so it does not change).
    predicts_bucketed = True
    trims_padding = "inputs_and_labels"
    reads_pooled_output = False

    def __init__(self, backbone, num_classes, dropout=0.1, preprocessor=None,
                 label_names=None, **kwargs):
        if num_classes < 2:
            raise ValueError(
                f"BertTokenClassifier: num_classes must be >= 2, got "
                f"{num_classes}."
            )
        label_names = checked_label_names(label_names, num_classes,
                                          "BertTokenClassifier")
        # === Layers ===
        head_dropout, head = head_layers(
            backbone, num_classes, dropout, name="token_classifier"
        )
        # === Functional model ===
        inputs = backbone.input
        sequence = backbone(inputs)["sequence_output"]
        outputs = float32_logits(head(head_dropout(sequence)))
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
        self.token_classifier_head = head
        # === Default compilation ===
        self.compile()

    def default_loss(self):
        # `ignore_class` averages over the labelled positions only.
        return keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, ignore_class=IGNORE_LABEL
        )

    def default_weighted_metrics(self):
        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]

    def predict_words(self, words, batch_size=None, **kwargs):
        """One predicted label id per word, for lists of words.

        Words cut off by the sequence length (or that tokenize to nothing)
        get label 0, which should be the "outside" tag (e.g. "O").

        Args:
            words: list of word lists (one per sentence).
            batch_size: int. Sentences per batch.

        Returns:
            list of lists of int label ids, each as long as its sentence.
        """
        if self.preprocessor is None:
            raise ValueError(
                "predict_words needs a preprocessor; build the model with "
                "preprocessor=BertTokenClassifierPreprocessor(...)."
            )
        logits = self.predict(words, batch_size=batch_size, **kwargs)
        token_labels = np.argmax(logits, axis=-1)
        positions = self.preprocessor.first_token_positions(words)
        return [
            [int(token_labels[i, p]) if p >= 0 else 0 for p in sentence]
            for i, sentence in enumerate(positions)
        ]

    def predict_labels(self, words, batch_size=None, **kwargs):
        """`predict_words` with each tag's name (its id without
        `label_names`).

        Returns:
            list of lists of str (or int), each as long as its sentence.
        """
        return named(self.predict_words(words, batch_size=batch_size,
                                        **kwargs), self.label_names)

    def get_config(self):
        config = super().get_config()
        config.update(num_classes=self.num_classes, dropout=self.dropout,
                      label_names=self.label_names)
        return config
