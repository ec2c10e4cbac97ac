import keras

from keras_bert.preprocessing.host_preprocessing import MAX_EAGER_EXAMPLES
from keras_bert.preprocessing.host_preprocessing import host_token_ids
from keras_bert.preprocessing.host_preprocessing import pack_segments
from keras_bert.preprocessing.preprocessing_layer import tf_preprocessing
from keras_bert.preprocessing.preprocessor import Preprocessor


@keras.saving.register_keras_serializable(package="keras_bert")
class BertPreprocessor(Preprocessor):
    """Strings -> BERT's input dict: `BertTokenizer` then `BertPacker`.

    `x` is one text segment (a string or a batch of strings), a tuple of two
    segments, or a dict of one or two segments. A dict's segments are taken
    in sorted key order, which is the order `tf.data` uses for dicts, so
    eager and `tf.data` calls agree: `{"sentence1": ..., "sentence2": ...}`
    works, `{"question": ..., "context": ...}` would pack the context first;
    use a tuple when in doubt. `y` and `sample_weight` pass through, so
    `ds.map(preprocessor)` works on `(text, label)` datasets.

    Args:
        tokenizer: `keras_bert.BertTokenizer`.
        sequence_length: int. Packed length (the maximum with dynamic
            padding).
        truncate: str. "longest_first" or "waterfall" (see `BertPacker`).
        dynamic_padding: bool. Pad each batch to its longest row.

    Example:

    >>> preprocessor = keras_bert.BertPreprocessor.from_preset(
    ...     "path/to/preset", sequence_length=128)  # doctest: +SKIP
    >>> x = preprocessor(("The cat sat.", "It was tired."))  # doctest: +SKIP
    >>> sorted(x)  # doctest: +SKIP
    ['padding_mask', 'segment_ids', 'token_ids']
    """

    def __init__(
        self,
        tokenizer,
        sequence_length=512,
        truncate="longest_first",
        dynamic_padding=False,
        **kwargs,
    ):
        super().__init__(tokenizer, sequence_length=sequence_length,
                         truncate=truncate, dynamic_padding=dynamic_padding,
                         **kwargs)
        self.dynamic_padding = dynamic_padding

    @tf_preprocessing
    def call(self, x, y=None, sample_weight=None):
        if isinstance(x, dict):
            if not 1 <= len(x) <= 2:
                raise ValueError(
                    "A dict input must hold 1 or 2 text segments; got keys "
                    f"{sorted(x)}."
                )
            x = tuple(x[key] for key in sorted(x))
        segments = x if isinstance(x, tuple) else (x,)
        token_ids = tuple(self.tokenizer(segment) for segment in segments)
        packed = self.packer(token_ids)
        return keras.utils.pack_x_y_sample_weight(packed, y, sample_weight)

    def host_arrays(self, x):
        """`self(x)` as NumPy int32 arrays, computed without TensorFlow
        (`keras_bert.preprocessing.host_preprocessing`: the same ids and
        rows), or None where that path does not apply: without the
        `tokenizers` package, or for input other than one list
        of strings or a tuple of two of the same length, of at most
        `MAX_EAGER_EXAMPLES` each. `predict` on strings takes it first.

        Example:
        >>> preprocessor = keras_bert.BertPreprocessor(
        ...     keras_bert.BertTokenizer(
        ...         ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"]),
        ...     sequence_length=4)
        >>> arrays = preprocessor.host_arrays(["a"])
        >>> arrays["token_ids"].tolist()
        [[2, 5, 3, 0]]
        """
        segments = x if isinstance(x, tuple) else (x,)
        if (not 1 <= len(segments) <= 2
                or not all(_strings(segment) for segment in segments)
                or len({len(segment) for segment in segments}) != 1
                or len(segments[0]) > MAX_EAGER_EXAMPLES):
            return None
        token_ids = [host_token_ids(self.tokenizer, segment)
                     for segment in segments]
        if token_ids[0] is None:
            return None
        tokenizer = self.tokenizer
        return pack_segments(
            token_ids, self.sequence_length, tokenizer.cls_token_id,
            tokenizer.sep_token_id, tokenizer.pad_token_id,
            truncate=self.truncate, dynamic_padding=self.dynamic_padding)

    def get_config(self):
        config = super().get_config()
        config["dynamic_padding"] = self.dynamic_padding
        return config


def _strings(value):
    return isinstance(value, list) and all(isinstance(item, str)
                                           for item in value)
