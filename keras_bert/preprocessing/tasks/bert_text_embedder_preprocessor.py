import keras

from keras_bert.preprocessing.host_preprocessing import pack_segments
from keras_bert.preprocessing.host_preprocessing import token_id_lists
from keras_bert.preprocessing.preprocessing_layer import tf_preprocessing
from keras_bert.preprocessing.preprocessor import Preprocessor
from keras_bert.preprocessing.tensorflow_modules import tf


def _is_text(value):
    return isinstance(value, tf.Tensor) and value.dtype == tf.string


@keras.saving.register_keras_serializable(package="keras_bert")
class BertTextEmbedderPreprocessor(Preprocessor):
    """Texts -> `[CLS] text [SEP]` rows for `BertTextEmbedder`, one text each.

    Two kinds of input:

    * texts `x` (a batch of strings), for embedding: the packed dict
      (`y`, `sample_weight` pass through);
    * a tuple of text columns `(anchors, positives[, negatives...])`, for
      contrastive training, or `x` and `y` both strings (a `tf.data`
      dataset of `(query, passage)` pairs arrives that way): a tuple of
      packed dicts, one per column, each padded on its own, and as labels
      `0, 1, ..., batch - 1`, the candidate index of each anchor's
      positive in `MultipleNegativesRankingLoss`.

    An empty string packs as `[CLS] [SEP]`; longer texts are cut to
    `sequence_length` tokens (`pack_texts` counts them).

    Args:
        tokenizer: `keras_bert.BertTokenizer`.
        sequence_length: int. Longest packed row, special tokens included.
        dynamic_padding: bool. Pad each batch (each column) to its longest
            row instead of `sequence_length`: much less work when texts
            are short, but a new shape per batch for compiled backends.

    Example:
    >>> tokenizer = keras_bert.BertTokenizer(
    ...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "cat", "sat"])
    >>> pre = BertTextEmbedderPreprocessor(tokenizer, sequence_length=6)
    >>> keras.ops.convert_to_numpy(pre(["a cat sat", ""])["token_ids"]).tolist()
    [[2, 5, 6, 7, 3, 0], [2, 3, 0, 0, 0, 0]]
    >>> (query, passage), labels = pre((["a cat"], ["cat sat"]))
    >>> keras.ops.convert_to_numpy(labels).tolist()
    [0]
    """

    def __init__(self, tokenizer, sequence_length=256, dynamic_padding=False,
                 **kwargs):
        super().__init__(tokenizer, sequence_length=sequence_length,
                         dynamic_padding=dynamic_padding, **kwargs)
        self.dynamic_padding = dynamic_padding

    def _pack(self, texts):
        return self.packer(self.tokenizer(texts))

    @tf_preprocessing
    def call(self, x, y=None, sample_weight=None):
        columns = None
        if isinstance(x, tuple):
            columns = x
        elif _is_text(y):
            columns = (x, y)
            # A third column of a (query, positive, negative) dataset
            # arrives where sample weights would; weights are never text.
            if _is_text(sample_weight):
                columns, sample_weight = columns + (sample_weight,), None
            y = None
        if columns is None:
            return keras.utils.pack_x_y_sample_weight(self._pack(x), y,
                                                      sample_weight)
        if len(columns) < 2 or y is not None:
            raise ValueError(
                "Contrastive input is a tuple of 2 or more text columns "
                "(anchors, positives, hard negatives...) and no labels; got "
                f"{len(columns)} column(s)"
                f"{' and labels' if y is not None else ''}.")
        packed = tuple(self._pack(column) for column in columns)
        labels = tf.range(tf.shape(packed[0]["token_ids"])[0])
        return keras.utils.pack_x_y_sample_weight(packed, labels,
                                                  sample_weight)

    def pack_texts(self, texts):
        """`(packed, num_truncated)` for a list of strings.

        `packed` holds NumPy int32 arrays (padded to the longest row, at
        most `sequence_length`); `num_truncated` counts the texts that had
        more tokens than fit. The texts are tokenized by Hugging Face
        `tokenizers` (the same ids, and no TensorFlow import;
        `host_preprocessing.token_id_lists`).
        """
        tokenizer = self.tokenizer
        token_ids = token_id_lists(tokenizer, texts)
        budget = self.sequence_length - 2
        packed = pack_segments(
            [token_ids], self.sequence_length, tokenizer.cls_token_id,
            tokenizer.sep_token_id, tokenizer.pad_token_id,
            dynamic_padding=True)
        return packed, sum(len(ids) > budget for ids in token_ids)

    def get_config(self):
        config = super().get_config()
        config["dynamic_padding"] = self.dynamic_padding
        return config
