import keras
from keras import ops

from keras_bert.models.finetuning_task import FinetuningTask
from keras_bert.models.finetuning_task import float32_logits
from keras_bert.models.finetuning_task import head_layers


@keras.saving.register_keras_serializable(package="keras_bert")
def span_loss(y_true, y_pred):
    """Mean of the start and end cross-entropies over sequence positions.

    `y_true`: int `(batch, 2)` token positions `[start, end]`; `y_pred`:
    logits `(batch, sequence_length, 2)`.
    """
    y_true = ops.cast(y_true, "int32")
    losses = [
        keras.losses.sparse_categorical_crossentropy(
            y_true[:, i], y_pred[..., i], from_logits=True
        )
        for i in range(2)
    ]
    return (losses[0] + losses[1]) / 2.0


@keras.saving.register_keras_serializable(package="keras_bert")
def span_exact_match(y_true, y_pred):
    """1 where both the argmax start and the argmax end are right."""
    predicted = ops.cast(ops.argmax(y_pred, axis=1), "int32")
    hits = ops.all(ops.equal(predicted, ops.cast(y_true, "int32")), axis=-1)
    return ops.cast(hits, "float32")


@keras.saving.register_keras_serializable(package="keras_bert")
class BertQuestionAnswerer(FinetuningTask):
    """Extractive question answering (SQuAD) with start/end span logits.

    One Dense(2) layer on every token: unit 0 scores the token as the
    answer's start, unit 1 as its end. Training labels are the token
    positions `[start, end]` of the answer in each window (the preprocessor
    points windows that do not hold the answer at [CLS], position 0, as
    the original BERT does). `answer()` runs the whole pipeline: windows,
    logits, n-best spans across windows, text from character offsets.

    Inputs: the backbone's dict (windows, made outside the graph since a
    question can give several; see `answer()` for raw text). Output: logits
    `(batch, sequence_length, 2)`, `[..., 0]` start and `[..., 1]` end.

    Args:
        backbone: `keras_bert.BertBackbone`.
        dropout: float. Dropout on the sequence output before the head
            (0.0: the reference BERT QA head has none).
        preprocessor: optional
            `keras_bert.preprocessing.tasks.BertQuestionAnswererPreprocessor`.

    Example:
    >>> import numpy as np
    >>> backbone = keras_bert.BertBackbone(vocabulary_size=100, num_layers=2,
    ...     num_heads=2, hidden_dim=16, intermediate_dim=32)
    >>> model = BertQuestionAnswerer(backbone)
    >>> logits = model({"token_ids": np.array([[2, 8, 3, 9, 10, 3]]),
    ...                 "segment_ids": np.array([[0, 0, 0, 1, 1, 1]]),
    ...                 "padding_mask": np.ones((1, 6), "int32")})
    >>> tuple(logits.shape)
    (1, 6, 2)
    """

    maps_preprocessor = False
    reads_pooled_output = False

    def __init__(self, backbone, dropout=0.0, preprocessor=None, **kwargs):
        # === Layers ===
        head_dropout, head = head_layers(
            backbone, 2, dropout, name="qa"
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
        self.dropout = dropout
        self.qa_head = head
        # === Default compilation ===
        self.compile()

    def default_loss(self):
        return span_loss

    def default_metrics(self):
        return [keras.metrics.MeanMetricWrapper(span_exact_match,
                                                name="span_exact_match")]

    def answer(self, questions, contexts, batch_size=None, n_best_size=20,
               max_answer_length=30, **kwargs):
        """Answers questions from contexts: text spans with their scores.

        Args:
            questions: list of question strings.
            contexts: list of context strings, one per question.
            batch_size: int. Windows per batch.
            n_best_size: int. Start and end candidates kept per window.
            max_answer_length: int. Longest answer, in tokens.

        Returns:
            list of dicts `{"text", "start", "end", "score"}` (character
            offsets into the context; `text` is "" when no span is valid).
        """
        if self.preprocessor is None:
            raise ValueError(
                "answer() needs a preprocessor; build the model with "
                "preprocessor=BertQuestionAnswererPreprocessor(...)."
            )
        windows = self.preprocessor.windows(questions, contexts)
        logits = self.predict(windows["inputs"], batch_size=batch_size, **kwargs)
        return self.preprocessor.best_answers(
            windows, logits, contexts, n_best_size=n_best_size,
            max_answer_length=max_answer_length,
        )

    def get_config(self):
        config = super().get_config()
        config["dropout"] = self.dropout
        return config
