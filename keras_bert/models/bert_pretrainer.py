import functools

import keras

from keras_bert.layers.bert_initializer import BertInitializer
from keras_bert.layers.masked_lm_head import MaskedLMHead
from keras_bert.losses.sparse_logits_crossentropy import (
    SparseLogitsCrossentropy,
)
from keras_bert.metrics.sparse_logits_accuracy import SparseLogitsAccuracy
from keras_bert.models.task import Task
from keras_bert.optimizers.bert_optimizer import create_optimizer
from keras_bert.packed_inputs import PACKED_INPUTS


@keras.saving.register_keras_serializable(package="keras_bert")
class BertPretrainer(Task):
    """BERT pretraining model: masked LM (+ optional next-sentence) heads.

    The MLM head runs only at `mask_positions` (no full-sequence vocabulary
    logits) and its decoder is tied to the backbone's token embeddings. The
    NSP head is a 2-way linear layer on the pooled [CLS] output; label 1 is
    IsNext, 0 NotNext. With `next_sentence_prediction=False` the model is
    MLM only (RoBERTa-style single segments).

    Inputs: the backbone's dict plus `mask_positions` `(batch, num_masks)`.
    Outputs: `{"mlm_logits": (batch, num_masks, vocab), "nsp_logits":
    (batch, 2)}` (no `nsp_logits` when NSP is off).

    Args:
        backbone: `keras_bert.BertBackbone`.
        next_sentence_prediction: bool. Include the NSP head.
        preprocessor: optional `keras_bert.BertMaskedLMPreprocessor` (with
            the same `next_sentence_prediction`); with one, `fit` takes raw
            text (see `Task`). `from_preset` attaches one when the
            directory has a vocabulary.

    Example:
    >>> import numpy as np
    >>> backbone = keras_bert.BertBackbone.from_preset("tiny")
    >>> model = BertPretrainer(backbone)
    >>> out = model({"token_ids": np.array([[2, 4, 9, 3]]),
    ...              "segment_ids": np.zeros((1, 4), "int32"),
    ...              "padding_mask": np.ones((1, 4), "int32"),
    ...              "mask_positions": np.array([[1, 2]])})
    >>> tuple(out["mlm_logits"].shape), tuple(out["nsp_logits"].shape)
    ((1, 2, 30522), (1, 2))
    """

    def __init__(
        self,
        backbone,
        next_sentence_prediction=True,
        preprocessor=None,
        **kwargs,
    ):
        made_pairs = getattr(preprocessor, "next_sentence_prediction",
                             next_sentence_prediction)
        if made_pairs != next_sentence_prediction:
            raise ValueError(
                f"BertPretrainer(next_sentence_prediction="
                f"{next_sentence_prediction}) got a preprocessor with "
                f"next_sentence_prediction={made_pairs}; they must match."
            )
        mlm_head = MaskedLMHead(
            vocabulary_size=backbone.vocabulary_size,
            hidden_dim=backbone.hidden_dim,
            token_embedding=backbone.token_embedding,
            activation=backbone.activation,
            layer_norm_epsilon=backbone.layer_norm_epsilon,
            initializer_range=backbone.initializer_range,
            dtype=backbone.dtype_policy,
            name="mlm_head",
        )
        nsp_head = None
        if next_sentence_prediction:
            nsp_head = keras.layers.Dense(
                2,
                kernel_initializer=BertInitializer(backbone.initializer_range),
                dtype=backbone.dtype_policy,
                name="nsp_head",
            )

        inputs = dict(backbone.input)
        inputs["mask_positions"] = keras.Input(
            shape=(None,), dtype="int32", name="mask_positions"
        )
        features = backbone({k: inputs[k] for k in PACKED_INPUTS})
        outputs = {
            "mlm_logits": mlm_head(
                features["sequence_output"], inputs["mask_positions"]
            )
        }
        if nsp_head is not None:
            outputs["nsp_logits"] = nsp_head(features["pooled_output"])
        super().__init__(
            inputs=inputs,
            outputs=outputs,
            backbone=backbone,
            preprocessor=preprocessor,
            **kwargs,
        )
        self.next_sentence_prediction = next_sentence_prediction
        self.mlm_head = mlm_head
        self.nsp_head = nsp_head
        # === Default compilation ===
        self.compile()

    def preprocessor_arguments(self):
        return {"next_sentence_prediction": self.next_sentence_prediction}

    def compile(
        self,
        optimizer="auto",
        loss="auto",
        weighted_metrics="auto",
        total_steps="auto",
        learning_rate=1e-4,
        **kwargs,
    ):
        """Configures pretraining with the paper's recipe by default.

        Loss = L_MLM + L_NSP. L_MLM is the cross-entropy averaged over the
        selected positions only (`SparseLogitsCrossentropy`, which gathers
        the answer's logit instead of a one-hot of the vocabulary): the
        dataset passes `mask_weights` as the `mlm_logits` sample weight (1
        for a real prediction, 0 for padding) and the loss divides by their
        sum. Logged: `loss`, each head's
        loss (`mlm_logits_loss`, `nsp_logits_loss`; without NSP `loss`
        is the MLM loss alone) and accuracy (`mlm_logits_accuracy` over the
        masked tokens only, `SparseLogitsAccuracy`: a tie for the top logit
        counts as a miss; `nsp_logits_accuracy`).

        Args:
            optimizer: "auto" for `create_optimizer(total_steps,
                learning_rate)`: AdamW, weight decay 0.01 except LayerNorm
                and biases, linear warmup (1% of the run) then linear decay,
                gradient clipped to global norm 1.0. Or any Keras optimizer
                (e.g. `create_optimizer(..., optimizer="lamb")`).
            loss: "auto" for the losses above, or Keras losses keyed by
                output name.
            weighted_metrics: "auto" for the two accuracies, or Keras
                metrics keyed by output name.
            total_steps: "auto", int or None. Length of the run, to scale
                the schedule: "auto" takes it from the first `fit` (epochs
                x batches per epoch) when that call can know it; None, or
                "auto" when it cannot, uses the paper's 1,000,000 steps.
            learning_rate: float. Peak learning rate for "auto".
            **kwargs: passed to `keras.Model.compile` (e.g. `jit_compile`).
        """
        self._sized_compile = None
        if optimizer == "auto":
            if total_steps == "auto":
                # Called with the run's length by the first `fit`.
                self._sized_compile = functools.partial(
                    self.compile, optimizer, loss, weighted_metrics,
                    learning_rate=learning_rate, **kwargs)
            optimizer = create_optimizer(
                total_steps=(1_000_000 if total_steps in ("auto", None)
                             else total_steps),
                learning_rate=learning_rate,
                exclude_from_weight_decay=self.unread_weights(),
            )
        if loss == "auto":
            loss = {
                # Sum over masked positions / sum of mask_weights: the mean
                # over real predictions, whatever the padding.
                "mlm_logits": SparseLogitsCrossentropy(
                    reduction="mean_with_sample_weight"
                )
            }
            if self.next_sentence_prediction:
                loss["nsp_logits"] = (
                    keras.losses.SparseCategoricalCrossentropy(
                        from_logits=True
                    )
                )
        if weighted_metrics == "auto":
            # Keras prefixes the output name only when there are two
            # outputs; the MLM accuracy is logged as `mlm_logits_accuracy`
            # either way.
            weighted_metrics = {
                "mlm_logits": [SparseLogitsAccuracy(
                    "accuracy" if self.next_sentence_prediction
                    else "mlm_logits_accuracy")]
            }
            if self.next_sentence_prediction:
                weighted_metrics["nsp_logits"] = [
                    keras.metrics.SparseCategoricalAccuracy("accuracy")
                ]
        super().compile(
            optimizer=optimizer,
            loss=loss,
            weighted_metrics=weighted_metrics,
            **kwargs,
        )

    @property
    def reads_pooled_output(self):
        # Masked LM only leaves the pooler to fine-tuning.
        return self.next_sentence_prediction

    def get_config(self):
        config = super().get_config()
        config["next_sentence_prediction"] = self.next_sentence_prediction
        return config
