import keras

from keras_bert.preprocessing.preprocessing_layer import tf_preprocessing
from keras_bert.preprocessing.preprocessor import Preprocessor
from keras_bert.preprocessing.tensorflow_modules import tf


def pack_choices(tokenizer, packer, prompts, choices):
    """`[CLS] prompt [SEP] choice [SEP]` for each of `choices` `[batch, n]`,
    shaped `(batch, n, sequence_length)` (`packer` pads to a fixed length)."""
    num_choices = tf.shape(choices)[1]
    packed = packer((tokenizer(tf.repeat(prompts, num_choices)),
                     tokenizer(tf.reshape(choices, [-1]))))
    return {key: tf.reshape(value, [-1, num_choices, packer.sequence_length])
            for key, value in packed.items()}


@keras.saving.register_keras_serializable(package="keras_bert")
class BertMultipleChoicePreprocessor(Preprocessor):
    """(prompt, choices) -> one packed `[CLS] prompt [SEP] choice [SEP]` per
    choice, shaped `(batch, num_choices, sequence_length)`.

    Args:
        tokenizer: `keras_bert.BertTokenizer`.
        sequence_length: int. Packed length of each (prompt, choice) pair.
        truncate: str. "longest_first" or "waterfall" (see `BertPacker`).

    Inputs: `x = (prompts, choices)`, prompts `[batch]` strings and choices
    `[batch, num_choices]` strings; `y` the index of the right choice.

    Example:
    >>> tokenizer = keras_bert.BertTokenizer(
    ...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "he", "ran",
    ...      "sat", "flew"])
    >>> pre = BertMultipleChoicePreprocessor(tokenizer, sequence_length=6)
    >>> x = pre((["He"], [["ran", "sat", "flew"]]))
    >>> tuple(x["token_ids"].shape)
    (1, 3, 6)
    """

    def __init__(self, tokenizer, sequence_length=128,
                 truncate="longest_first", **kwargs):
        super().__init__(tokenizer, sequence_length=sequence_length,
                         truncate=truncate, **kwargs)

    @tf_preprocessing
    def call(self, x, y=None, sample_weight=None):
        if not isinstance(x, tuple) or len(x) != 2:
            raise ValueError(
                "BertMultipleChoicePreprocessor takes x = (prompts, choices)"
                f"; got {type(x).__name__}."
            )
        prompts, choices = (tf.convert_to_tensor(part) for part in x)
        if prompts.shape.rank != 1 or choices.shape.rank != 2:
            raise ValueError(
                "Expected prompts of shape [batch] and choices of shape "
                f"[batch, num_choices]; got {prompts.shape} and "
                f"{choices.shape}."
            )
        packed = pack_choices(self.tokenizer, self.packer, prompts, choices)
        return keras.utils.pack_x_y_sample_weight(packed, y, sample_weight)
