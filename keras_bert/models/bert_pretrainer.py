import keras

from keras_bert.layers.masked_lm_head import MaskedLMHead
from keras_bert.models.task import Task


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
        preprocessor: optional preprocessing layer kept with the model.

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
                kernel_initializer=keras.initializers.TruncatedNormal(
                    stddev=backbone.initializer_range
                ),
                dtype=backbone.dtype_policy,
                name="nsp_head",
            )

        inputs = dict(backbone.input)
        inputs["mask_positions"] = keras.Input(
            shape=(None,), dtype="int32", name="mask_positions"
        )
        features = backbone(
            {k: inputs[k] for k in ("token_ids", "segment_ids", "padding_mask")}
        )
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

    def get_config(self):
        config = super().get_config()
        config["next_sentence_prediction"] = self.next_sentence_prediction
        return config
