import keras
import numpy as np
from keras import ops

from keras_bert.checkpoints.cross_encoder_config import (
    cross_encoder_activation,
)
from keras_bert.checkpoints.preset_names import resolve_preset
from keras_bert.models.bucketed_inference import predict_bucketed
from keras_bert.models.bucketed_inference import progress_bar
from keras_bert.models.finetuning_task import FinetuningMixin
from keras_bert.models.finetuning_task import head_layers

OBJECTIVES = ("pointwise", "listwise")
SCORE_ACTIVATIONS = ("linear", "sigmoid")


@keras.saving.register_keras_serializable(package="keras_bert")
class BertCrossEncoder(FinetuningMixin, keras.Model):
    """A reranker: one relevance score per (query, passage) pair.

    The pair is read together as `[CLS] query [SEP] passage [SEP]` and a
    Dense(1) head scores the pooled output (the layout of Hugging Face
    `BertForSequenceClassification` with one label, so such cross-encoder
    checkpoints load with their head). Slower than a bi-encoder (every
    pair is a forward pass) and more accurate: use it on the top few
    passages a `BertTextEmbedder` retrieved (`rerank`).

    Inputs: the backbone's dict `(batch, length)` -> scores `(batch,)`; or
    `(batch, group, length)` (each query with a group of passages) ->
    `(batch, group)`. With a `BertCrossEncoderPreprocessor`, `fit`,
    `predict`, `score` and `rerank` take strings.

    Objectives (`compile()`'s default loss): "pointwise", binary
    cross-entropy of each pair's score against its 0/1 relevance;
    "listwise", softmax cross-entropy over each query's group of passages,
    the label being the index of the relevant one.

    Args:
        backbone: `keras_bert.BertBackbone`.
        objective: str. "pointwise" or "listwise".
        dropout: float. Dropout on the pooled output before the head.
        preprocessor: optional `BertCrossEncoderPreprocessor`.
        score_activation: str. What `score` and `rerank` apply to the
            logit: "linear" (the logit itself) or "sigmoid" (a 0-1
            relevance). `from_preset` on a Hugging Face or
            sentence-transformers checkpoint takes the activation
            sentence-transformers' `CrossEncoder` applies to it (the one
            its config names, else a sigmoid). The model's outputs, and
            so its training losses, are always logits.

    Example:
    >>> import numpy as np
    >>> backbone = keras_bert.BertBackbone(vocabulary_size=100, num_layers=2,
    ...     num_heads=2, hidden_dim=16, intermediate_dim=32)
    >>> model = BertCrossEncoder(backbone)
    >>> scores = model({"token_ids": np.array([[2, 8, 3, 9, 3]]),
    ...                 "segment_ids": np.array([[0, 0, 0, 1, 1]]),
    ...                 "padding_mask": np.ones((1, 5), "int32")})
    >>> tuple(scores.shape)
    (1,)
    """

    def __init__(self, backbone, objective="pointwise", dropout=0.1,
                 preprocessor=None, score_activation="linear", **kwargs):
        if objective not in OBJECTIVES:
            raise ValueError(
                f"BertCrossEncoder: objective must be one of {OBJECTIVES}; "
                f"got {objective!r}.")
        if score_activation not in SCORE_ACTIVATIONS:
            raise ValueError(
                "BertCrossEncoder: score_activation must be one of "
                f"{SCORE_ACTIVATIONS}; got {score_activation!r}.")
        # === Layers ===
        head_dropout, head = head_layers(backbone, 1, dropout,
                                         name="classifier")
        # === Model ===
        # Subclassed, so one model takes pairs (batch, length) and groups
        # (batch, group, length).
        super().__init__(backbone=backbone, preprocessor=preprocessor,
                         **kwargs)
        self.classifier_dropout = head_dropout
        self.classifier_head = head
        head.build((None, backbone.hidden_dim))
        self.built = True
        # === Config ===
        self.objective = objective
        self.dropout = dropout
        self.score_activation = score_activation
        self.compile()

    def call(self, inputs, training=False):
        if len(inputs["token_ids"].shape) == 3:
            group = ops.shape(inputs["token_ids"])[1]
            flat = {key: ops.reshape(value, (-1, ops.shape(value)[-1]))
                    for key, value in inputs.items()}
            return ops.reshape(self._score(flat, training), (-1, group))
        return self._score(inputs, training)

    def _score(self, inputs, training):
        pooled = self.backbone(inputs, training=training)["pooled_output"]
        logits = self.classifier_head(
            self.classifier_dropout(pooled, training=training))
        return ops.cast(logits[:, 0], "float32")

    def score(self, queries, passages, batch_size=32, verbose="auto"):
        """Scores of `(queries[i], passages[i])` pairs, length-bucketed.

        Returns float32 NumPy `(n,)` scores (higher is more relevant): the
        logits, through `score_activation`.
        """
        if self.preprocessor is None:
            raise ValueError(
                "BertCrossEncoder.score needs a preprocessor (attach a "
                "BertCrossEncoderPreprocessor).")
        queries, passages = list(queries), list(passages)
        if len(queries) != len(passages):
            raise ValueError(
                f"score takes as many queries as passages; got "
                f"{len(queries)} and {len(passages)}.")
        if not queries:
            return np.zeros((0,), "float32")
        progress = progress_bar(len(queries), batch_size, verbose, "pair")
        packed = self.preprocessor.pack_pairs(queries, passages)
        logits = predict_bucketed(self, packed, batch_size=batch_size,
                                  progress=progress).astype("float32")
        if self.score_activation == "sigmoid":
            return (1.0 / (1.0 + np.exp(-logits))).astype("float32")
        return logits

    def rerank(self, query, passages, top_k=None, batch_size=32):
        """Orders `passages` by relevance to `query`.

        Returns `(indices, scores)`: NumPy arrays of the `top_k` best
        passages (all when None), best first.
        """
        passages = list(passages)
        scores = self.score([query] * len(passages), passages,
                            batch_size=batch_size, verbose=0)
        order = np.argsort(-scores, kind="stable")[:top_k]
        return order, scores[order]

    def default_loss(self):
        if self.objective == "listwise":
            return keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        return keras.losses.BinaryCrossentropy(from_logits=True)

    def default_metrics(self):
        if self.objective == "listwise":
            return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
        return [keras.metrics.BinaryAccuracy(name="accuracy", threshold=0.0)]

    @classmethod
    def from_preset(cls, preset, load_weights=True, preprocessor="auto",
                    sequence_length=None, **kwargs):
        """A cross-encoder from a pretrained model's name or directory.

        As `Task.from_preset`; a Hugging Face or sentence-transformers
        checkpoint (e.g. "cross-encoder/ms-marco-MiniLM-L-6-v2") loads
        with its head and the score activation sentence-transformers
        applies to it, unless `score_activation` is given.
        """
        preset = resolve_preset(preset, load_weights,
                                kwargs.get("allow_pickle", False))
        if "score_activation" not in kwargs:
            activation = cross_encoder_activation(preset)
            if activation is not None:
                kwargs["score_activation"] = activation
        return super().from_preset(preset, load_weights, preprocessor,
                                   sequence_length, **kwargs)

    def get_config(self):
        config = super().get_config()
        config.update(objective=self.objective, dropout=self.dropout,
                      score_activation=self.score_activation)
        return config
