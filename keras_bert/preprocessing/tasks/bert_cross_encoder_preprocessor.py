import keras

from keras_bert.preprocessing.bert_packer import BertPacker
from keras_bert.preprocessing.preprocessing_layer import tf_preprocessing
from keras_bert.preprocessing.preprocessor import Preprocessor
from keras_bert.preprocessing.tasks.bert_multiple_choice_preprocessor import (
    pack_choices,
)
from keras_bert.preprocessing.tensorflow_modules import tf


@keras.saving.register_keras_serializable(package="keras_bert")
class BertCrossEncoderPreprocessor(Preprocessor):
    """(query, passage) -> `[CLS] query [SEP] passage [SEP]` for reranking.

    `x = (queries, passages)`: with passages `[batch]` strings, one packed
    row per pair, `(batch, sequence_length)` (pointwise: `y` is each
    pair's relevance, 0 or 1); with passages `[batch, group]` strings, each
    query is packed with each of its passages, `(batch, group,
    sequence_length)` (listwise: `y` is the index of the relevant passage).
    A pair that does not fit is truncated longest-first, as in
    sentence-transformers' `CrossEncoder`.

    Args:
        tokenizer: `keras_bert.BertTokenizer`.
        sequence_length: int. Packed length of a pair.
        truncate: str. "longest_first" or "waterfall" (see `BertPacker`).

    Example:
    >>> tokenizer = keras_bert.BertTokenizer(
    ...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "who", "ran",
    ...      "he", "sat"])
    >>> pre = BertCrossEncoderPreprocessor(tokenizer, sequence_length=6)
    >>> tuple(pre((["who ran"], ["he ran"]))["token_ids"].shape)
    (1, 6)
    >>> tuple(pre((["who ran"], [["he ran", "he sat"]]))["token_ids"].shape)
    (1, 2, 6)
    """

    def __init__(self, tokenizer, sequence_length=512,
                 truncate="longest_first", **kwargs):
        super().__init__(tokenizer, sequence_length=sequence_length,
                         truncate=truncate, **kwargs)

    @tf_preprocessing
    def call(self, x, y=None, sample_weight=None):
        if not isinstance(x, tuple) or len(x) != 2:
            raise ValueError(
                "BertCrossEncoderPreprocessor takes x = (queries, passages); "
                f"got {type(x).__name__}.")
        queries, passages = (tf.convert_to_tensor(part) for part in x)
        if queries.shape.rank != 1 or passages.shape.rank not in (1, 2):
            raise ValueError(
                "Expected queries of shape [batch] and passages of shape "
                f"[batch] or [batch, group]; got {queries.shape} and "
                f"{passages.shape}.")
        if passages.shape.rank == 2:
            packed = pack_choices(self.tokenizer, self.packer, queries,
                                  passages)
        else:
            packed = self.packer((self.tokenizer(queries),
                                  self.tokenizer(passages)))
        return keras.utils.pack_x_y_sample_weight(packed, y, sample_weight)

    def pack_pairs(self, queries, passages):
        """Packed pairs as NumPy int32 arrays, padded to the longest pair
        (at most `sequence_length`): the input of bucketed scoring."""
        packer = BertPacker.from_tokenizer(
            self.tokenizer, sequence_length=self.sequence_length,
            truncate=self.truncate, dynamic_padding=True)
        packed = packer((
            self.tokenizer(tf.constant(list(queries), tf.string)),
            self.tokenizer(tf.constant(list(passages), tf.string))))
        return {key: keras.ops.convert_to_numpy(value)
                for key, value in packed.items()}
