import inspect

import keras

from keras_bert.preprocessing.bert_packer import BertPacker
from keras_bert.preprocessing.bert_tokenizer import BertTokenizer
from keras_bert.preprocessing.preprocessing_layer import PreprocessingLayer


@keras.saving.register_keras_serializable(package="keras_bert")
class Preprocessor(PreprocessingLayer):
    """Base of the preprocessors that turn text into a task's inputs.

    It owns what they all share: a `BertTokenizer` (checked on
    construction), the packed `sequence_length`, a `BertPacker` built from
    the tokenizer's special tokens, loading from a checkpoint directory
    (`from_preset`) and saving the vocabulary (`save_to_preset`).
    Subclasses implement `call` for their task's input and labels.

    Args:
        tokenizer: `keras_bert.BertTokenizer`.
        sequence_length: int. Packed length in tokens.
        truncate: str. "longest_first" or "waterfall" (see `BertPacker`).
        dynamic_padding: bool. Pad each batch to its longest row, for the
            subclasses whose output allows it (`BertPreprocessor`,
            `BertTextEmbedderPreprocessor`).

    Example:
    >>> tokenizer = keras_bert.BertTokenizer(
    ...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "cat"])
    >>> pre = keras_bert.BertPreprocessor(tokenizer, sequence_length=6)
    >>> isinstance(pre, keras_bert.Preprocessor), pre.packer.sequence_length
    (True, 6)
    """

    nested_config_keys = ("tokenizer",)

    def __init__(self, tokenizer, sequence_length=512,
                 truncate="longest_first", dynamic_padding=False, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(tokenizer, BertTokenizer):
            raise TypeError(
                f"{type(self).__name__}: `tokenizer` must be a "
                f"keras_bert.BertTokenizer; got {type(tokenizer).__name__}."
            )
        limit = tokenizer.model_max_length
        if isinstance(sequence_length, int) and limit and (
                sequence_length > limit):
            # The tokenizer's preset records the model's positions; a
            # longer packing would fail only at the model's first call.
            raise ValueError(
                f"{type(self).__name__}: sequence_length={sequence_length} "
                f"is more than the {limit} positions of the model this "
                f"tokenizer belongs to (its model_max_length); pass "
                f"sequence_length={limit} or less, or a tokenizer with "
                "model_max_length=None for a model with more positions.")
        self.tokenizer = tokenizer
        self.sequence_length = sequence_length
        self.truncate = truncate
        self.packer = BertPacker.from_tokenizer(
            tokenizer,
            sequence_length=sequence_length,
            truncate=truncate,
            dynamic_padding=dynamic_padding,
        )

    @classmethod
    def from_preset(cls, directory, sequence_length=None, max_positions=None,
                    **kwargs):
        """Builds the preprocessor on `BertTokenizer.from_preset(directory)`.

        Args:
            directory: str. A Hugging Face, Google, keras_bert or keras-hub
                directory with a vocabulary.
            sequence_length: int or None. None: this class's default,
                capped at the checkpoint's `model_max_length` when known
                and at `max_positions`.
            max_positions: int or None. The positions of the model the
                preprocessor feeds, when known.
            **kwargs: other constructor arguments.
        """
        tokenizer = BertTokenizer.from_preset(directory)
        if sequence_length is None:
            default = inspect.signature(cls.__init__).parameters[
                "sequence_length"].default
            sequence_length = min(default,
                                  tokenizer.model_max_length or default,
                                  max_positions or default)
        return cls(tokenizer, sequence_length=sequence_length, **kwargs)

    def save_to_preset(self, directory):
        """Saves the tokenizer files (`BertTokenizer.save_to_preset`)."""
        self.tokenizer.save_to_preset(directory)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "sequence_length": self.sequence_length,
                "truncate": self.truncate,
            }
        )
        return config
