import keras
import numpy as np

from keras_bert.labels import IGNORE_LABEL
from keras_bert.preprocessing.preprocessing_layer import tf_preprocessing
from keras_bert.preprocessing.preprocessor import Preprocessor
from keras_bert.preprocessing.tensorflow_modules import tf


def _as_ragged_words(words):
    if isinstance(words, tf.RaggedTensor):
        return words
    words = tf.convert_to_tensor(words)
    if words.shape.rank != 2 or words.dtype != tf.string:
        raise ValueError(
            "BertTokenClassifierPreprocessor takes a batch of word lists "
            f"(strings, [batch, (words)]); got {words.dtype.name} of shape "
            f"{words.shape}."
        )
    return tf.RaggedTensor.from_tensor(words)


@keras.saving.register_keras_serializable(package="keras_bert")
class BertTokenClassifierPreprocessor(Preprocessor):
    """Word lists (and word tags) -> BERT inputs with token-level labels.

    Each word is split into WordPieces; the word's label goes on its first
    piece and every other position (`[CLS]`, `[SEP]`, padding, `##`
    continuations) gets `-100`, which the loss ignores and the returned
    sample weights zero out. Sentences longer than `sequence_length - 2`
    pieces are cut at the end; `first_token_positions` says where each
    word landed (-1 when it was cut off or has no pieces) so predictions
    can be mapped back to words.

    Args:
        tokenizer: `keras_bert.BertTokenizer`.
        sequence_length: int. Packed length.

    Inputs: `x` a batch of word lists (`tf.RaggedTensor` of strings, or
    lists of lists), `y` the matching integer labels per word.

    Example:
    >>> tokenizer = keras_bert.BertTokenizer(
    ...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "john", "lives",
    ...      "in", "new", "york", "##shire"])
    >>> pre = BertTokenClassifierPreprocessor(tokenizer, sequence_length=8)
    >>> x, y, w = pre([["John", "lives", "in", "Yorkshire"]], [[1, 0, 0, 2]])
    >>> keras.ops.convert_to_numpy(y).tolist()
    [[-100, 1, 0, 0, 2, -100, -100, -100]]
    """

    def __init__(self, tokenizer, sequence_length=128, **kwargs):
        super().__init__(tokenizer, sequence_length=sequence_length, **kwargs)

    def _word_pieces(self, words):
        """[batch, (words)] -> [batch, (words), (pieces)] token ids."""
        pieces = self.tokenizer(words.flat_values)
        return tf.RaggedTensor.from_row_splits(pieces, words.row_splits)

    @tf_preprocessing
    def call(self, x, y=None, sample_weight=None):
        words = _as_ragged_words(x)
        pieces = self._word_pieces(words)
        x = self.packer(pieces.merge_dims(1, 2))
        if y is None:
            return x
        if not isinstance(y, tf.RaggedTensor):
            y = tf.RaggedTensor.from_tensor(tf.convert_to_tensor(y))
        y = tf.cast(y, tf.int32)
        if tf.executing_eagerly():
            if not np.array_equal(y.row_lengths(), words.row_lengths()):
                raise ValueError(
                    "Every sentence needs one label per word; the numbers "
                    f"of words are {words.row_lengths().numpy().tolist()} "
                    f"and of labels {y.row_lengths().numpy().tolist()}."
                )
        else:
            tf.debugging.assert_equal(
                y.row_lengths(), words.row_lengths(),
                message="one label per word is needed",
            )
        # Broadcast each word's label to its pieces, keep it on the first.
        num_pieces = pieces.row_lengths(axis=2)
        piece_labels = tf.repeat(y.flat_values, num_pieces.flat_values)
        is_first = tf.ragged.range(num_pieces.flat_values).flat_values == 0
        piece_labels = tf.where(is_first, piece_labels, IGNORE_LABEL)
        labels = pieces.merge_dims(1, 2).with_flat_values(piece_labels)
        labels = labels[:, : self.sequence_length - 2]
        batch_size = labels.nrows()
        edge = tf.fill([batch_size, 1], IGNORE_LABEL)
        labels = tf.concat([edge, labels, edge], axis=1)
        length = tf.shape(x["token_ids"])[1]
        labels = labels.to_tensor(IGNORE_LABEL)
        labels = tf.pad(labels, [[0, 0], [0, length - tf.shape(labels)[1]]],
                        constant_values=IGNORE_LABEL)
        weights = tf.cast(labels != IGNORE_LABEL, tf.float32)
        if sample_weight is not None:
            weights *= tf.cast(sample_weight, tf.float32)[:, tf.newaxis]
        return x, labels, weights

    def first_token_positions(self, words):
        """Position of each word's first piece in the packed sequence.

        Args:
            words: list of word lists.

        Returns:
            list of int lists, -1 for a word cut off by `sequence_length`
            or that tokenizes to nothing.
        """
        ragged = tf.ragged.constant([list(w) for w in words], dtype=tf.string)
        num_pieces = self._word_pieces(ragged).row_lengths(axis=2).to_list()
        positions = []
        for counts in num_pieces:
            starts = np.concatenate([[1], 1 + np.cumsum(counts)[:-1]]).astype(
                int
            ) if counts else np.zeros(0, int)
            keep = (np.asarray(counts) > 0) & (
                starts < self.sequence_length - 1
            )
            positions.append(np.where(keep, starts, -1).tolist())
        return positions
