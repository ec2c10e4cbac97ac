import keras

from keras_bert.models.finetuning_task import FinetuningTask
from keras_bert.models.finetuning_task import float32_logits
from keras_bert.models.finetuning_task import head_layers
from keras_bert.packed_inputs import PACKED_INPUTS


@keras.saving.register_keras_serializable(package="keras_bert")
class BertMultipleChoice(FinetuningTask):
    """Multiple choice (SWAG style): one score per (prompt, choice) pair.

    Each choice is packed with the prompt as `[CLS] prompt [SEP] choice
    [SEP]`; the backbone encodes every pair, a Dense(1) head scores its
    pooled output, and a softmax over the choices picks the answer.

    Inputs: the backbone's dict with one more axis, `(batch, num_choices,
    sequence_length)` each, or `(prompts, choices)` strings when a
    `BertMultipleChoicePreprocessor` is attached. Output: logits
    `(batch, num_choices)`.

    Args:
        backbone: `keras_bert.BertBackbone`.
        num_choices: int. Choices per example.
        dropout: float. Dropout on the pooled output before the head.
        preprocessor: optional
            `keras_bert.preprocessing.tasks.BertMultipleChoicePreprocessor`.

    Example:
    >>> import numpy as np
    >>> backbone = keras_bert.BertBackbone(vocabulary_size=100, num_layers=2,
    ...     num_heads=2, hidden_dim=16, intermediate_dim=32)
    >>> model = BertMultipleChoice(backbone, num_choices=4)
    >>> logits = model({"token_ids": np.full((1, 4, 5), 7),
    ...                 "segment_ids": np.zeros((1, 4, 5), "int32"),
    ...                 "padding_mask": np.ones((1, 4, 5), "int32")})
    >>> tuple(logits.shape)
    (1, 4)
    """

    # One score per choice: `fit` and `evaluate` on raw text cut the
    # padding no choice of a batch uses.
    trims_padding = "inputs"

    def __init__(self, backbone, num_choices, dropout=0.1, preprocessor=None,
                 **kwargs):
        if num_choices < 2:
            raise ValueError(
                f"BertMultipleChoice: num_choices must be >= 2, got "
                f"{num_choices}."
            )
        # === Layers ===
        head_dropout, head = head_layers(
            backbone, 1, dropout, name="classifier"
        )
        # === Functional model ===
        inputs = {
            name: keras.Input(shape=(num_choices, None), dtype="int32",
                              name=name)
            for name in PACKED_INPUTS
        }
        # The choices go through the backbone one slice at a time: the
        # same weights, and no reshape of a batch axis the graph cannot see.
        scores = [
            head(head_dropout(backbone(
                {name: tensor[:, choice, :] for name, tensor in inputs.items()}
            )["pooled_output"]))
            for choice in range(num_choices)
        ]
        outputs = float32_logits(keras.layers.Concatenate(
            axis=-1, dtype=backbone.dtype_policy)(scores))
        super().__init__(
            inputs=inputs,
            outputs=outputs,
            backbone=backbone,
            preprocessor=preprocessor,
            **kwargs,
        )
        # === Config ===
        self.num_choices = num_choices
        self.dropout = dropout
        self.classifier_head = head
        # === Default compilation ===
        self.compile()

    def default_loss(self):
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def default_metrics(self):
        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]

    def get_config(self):
        config = super().get_config()
        config.update(num_choices=self.num_choices, dropout=self.dropout)
        return config
