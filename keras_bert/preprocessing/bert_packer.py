import keras

from keras_bert.preprocessing.preprocessing_layer import PreprocessingLayer
from keras_bert.preprocessing.preprocessing_layer import tf_preprocessing
from keras_bert.preprocessing.tensorflow_modules import tf

TRUNCATION_RULES = ("longest_first", "waterfall")


def _as_ragged(segment):
    if isinstance(segment, tf.RaggedTensor):
        return segment
    return tf.RaggedTensor.from_tensor(tf.convert_to_tensor(segment))


def truncated_lengths(lengths, budget, truncate, xp=tf):
    """How many tokens of each segment to keep so that their sum <= budget.

    Args:
        lengths: list of 1 or 2 int32 `[batch]` tensors (or NumPy arrays,
            with `xp=np`).
        budget: int, room left after the special tokens.
        truncate: "longest_first" or "waterfall" (see `BertPacker`).
        xp: the module whose `minimum`, `maximum` and `where` compute it:
            TensorFlow for the layer, NumPy for `host_preprocessing`.
    """
    if len(lengths) == 1:
        return [xp.minimum(lengths[0], budget)]
    first, second = lengths
    if truncate == "waterfall":
        keep_first = xp.minimum(first, budget)
        return [keep_first, xp.minimum(second, budget - keep_first)]
    # Hugging Face tokenizers' LongestFirst, in closed form: the shorter
    # segment keeps its length when it fits in half the budget and the longer
    # takes the rest; otherwise both get half, and an odd leftover token goes
    # to the longer segment (to the second one on a tie).
    short = xp.minimum(first, second)
    keep_long = xp.where(short > budget, short, xp.maximum(short, budget - short))
    halve = short + keep_long > budget
    keep_short = xp.where(halve, budget // 2, short)
    keep_long = xp.where(halve, budget // 2 + budget % 2, keep_long)
    first_is_long = first > second
    return [
        xp.minimum(first, xp.where(first_is_long, keep_long, keep_short)),
        xp.minimum(second, xp.where(first_is_long, keep_short, keep_long)),
    ]


@keras.saving.register_keras_serializable(package="keras_bert")
class BertPacker(PreprocessingLayer):
    """Packs one or two token-id segments into BERT's input dict.

    One segment gives `[CLS] A [SEP]`, two give `[CLS] A [SEP] B [SEP]`.
    `segment_ids` are 0 for `[CLS] A [SEP]` and 1 for `B [SEP]`;
    `padding_mask` is int32, 1 on real tokens and 0 on padding. Rows are
    padded with `pad_token_id` to `sequence_length`, or with
    `dynamic_padding=True` to the longest row of the batch (never longer
    than `sequence_length`).

    Segments that do not fit are truncated at their end; the special tokens
    are never dropped:

    * `"longest_first"` (the BERT rule, as in Hugging Face tokenizers): trim
      the longer segment until both are equally long, then trim both. When
      the budget is odd the leftover token goes to the segment that was
      longer, and to the second segment on a tie. (The original BERT
      `_truncate_seq_pair` gives it to the first segment instead: the
      results differ by at most one token per segment.)
    * `"waterfall"`: keep as much of the first segment as fits, then fill up
      with the second.

    Args:
        sequence_length: int. Length of the packed rows (the maximum with
            dynamic padding); at least 2 for one segment, 3 for two.
        cls_token_id, sep_token_id, pad_token_id: int. Defaults are those of
            the original English BERT vocabularies.
        truncate: str. "longest_first" or "waterfall".
        dynamic_padding: bool. Pad to the longest row of the batch.

    Inputs are a tensor of token ids (ragged `[batch, (tokens)]`, dense
    `[batch, tokens]` taken whole, or one unbatched `[tokens]` sequence), or
    a tuple of two of them. Map a dataset of pairs with
    `ds.map(lambda a, b: packer((a, b)))`.

    Example:

    >>> packer = keras_bert.BertPacker(sequence_length=8)
    >>> out = packer(([[5, 6, 7, 8]], [[9, 10, 11]]))
    >>> keras.ops.convert_to_numpy(out["token_ids"]).tolist()
    [[101, 5, 6, 7, 102, 9, 10, 102]]
    >>> keras.ops.convert_to_numpy(out["segment_ids"]).tolist()
    [[0, 0, 0, 0, 0, 1, 1, 1]]
    """

    def __init__(
        self,
        sequence_length=512,
        cls_token_id=101,
        sep_token_id=102,
        pad_token_id=0,
        truncate="longest_first",
        dynamic_padding=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if truncate not in TRUNCATION_RULES:
            raise ValueError(
                f"`truncate` must be one of {TRUNCATION_RULES}; got "
                f"{truncate!r}."
            )
        if not isinstance(sequence_length, int) or sequence_length < 2:
            raise ValueError(
                "`sequence_length` must be an int >= 2 ([CLS] and [SEP] take "
                f"two positions); got {sequence_length!r}."
            )
        self.sequence_length = sequence_length
        self.cls_token_id = cls_token_id
        self.sep_token_id = sep_token_id
        self.pad_token_id = pad_token_id
        self.truncate = truncate
        self.dynamic_padding = dynamic_padding

    @classmethod
    def from_tokenizer(cls, tokenizer, sequence_length=512, **kwargs):
        """A packer using `tokenizer`'s [CLS], [SEP] and [PAD] ids."""
        return cls(
            sequence_length=sequence_length,
            cls_token_id=tokenizer.cls_token_id,
            sep_token_id=tokenizer.sep_token_id,
            pad_token_id=tokenizer.pad_token_id,
            **kwargs,
        )

    def _segments(self, inputs):
        segments = list(inputs) if isinstance(inputs, tuple) else [inputs]
        if not 1 <= len(segments) <= 2:
            raise ValueError(
                f"BertPacker packs 1 or 2 segments; got {len(segments)}."
            )
        if len(segments) + 1 > self.sequence_length:
            raise ValueError(
                f"`sequence_length={self.sequence_length}` cannot hold the "
                f"{len(segments) + 1} special tokens of {len(segments)} "
                "segments; use a longer sequence_length."
            )
        segments = [_as_ragged(s) if s.shape.rank == 2 else s
                    for s in map(self._check, segments)]
        ranks = {s.shape.rank for s in segments}
        if len(ranks) > 1:
            raise ValueError(
                "All segments must be batched or all unbatched; got ranks "
                f"{sorted(ranks)}."
            )
        return segments, ranks.pop() == 1

    def _check(self, segment):
        if segment is None:
            raise TypeError("BertPacker got `None` instead of token ids.")
        if not isinstance(segment, tf.RaggedTensor):
            segment = tf.convert_to_tensor(segment)
        if not segment.dtype.is_integer:
            raise TypeError(
                "BertPacker takes integer token ids; got dtype "
                f"{segment.dtype.name}. Tokenize text first (or use "
                "BertPreprocessor)."
            )
        if segment.shape.rank not in (1, 2):
            raise ValueError(
                "Each segment must be `[tokens]` or `[batch, (tokens)]`; got "
                f"shape {segment.shape}."
            )
        return tf.cast(segment, tf.int32)

    @tf_preprocessing
    def call(self, inputs):
        segments, unbatched = self._segments(inputs)
        if unbatched:
            segments = [tf.RaggedTensor.from_tensor(s[tf.newaxis])
                        for s in segments]
        if len(segments) == 2 and not tf.executing_eagerly():
            tf.debugging.assert_equal(
                segments[0].nrows(), segments[1].nrows(),
                message="BertPacker: the two segments differ in batch size",
            )
        elif len(segments) == 2 and segments[0].nrows() != segments[1].nrows():
            raise ValueError(
                "The two segments differ in batch size: "
                f"{int(segments[0].nrows())} vs {int(segments[1].nrows())}."
            )
        budget = self.sequence_length - len(segments) - 1
        lengths = [tf.cast(s.row_lengths(), tf.int32) for s in segments]
        keep = truncated_lengths(lengths, budget, self.truncate)
        batch_size = segments[0].nrows()
        pieces, segment_ids = [], []
        cls = tf.RaggedTensor.from_tensor(
            tf.fill([batch_size, 1], tf.constant(self.cls_token_id, tf.int32))
        )
        sep = tf.RaggedTensor.from_tensor(
            tf.fill([batch_size, 1], tf.constant(self.sep_token_id, tf.int32))
        )
        for index, (segment, length) in enumerate(zip(segments, keep)):
            # Row-wise prefixes through the flat values: a ragged `<` with
            # broadcasting costs about a second of graph building per trace.
            starts = tf.repeat(tf.cast(segment.row_starts(), tf.int32), length)
            within = tf.ragged.range(length).flat_values
            segment = tf.RaggedTensor.from_row_lengths(
                tf.gather(segment.flat_values, starts + within),
                tf.cast(length, tf.int64),  # [CLS] and [SEP] rows' dtype
            )
            parts = ([cls] if index == 0 else []) + [segment, sep]
            pieces += parts
            segment_ids += [tf.ones_like(p) * index for p in parts]
        token_ids = tf.concat(pieces, axis=1)
        segment_ids = tf.concat(segment_ids, axis=1)
        shape = None if self.dynamic_padding else [None, self.sequence_length]
        outputs = {
            "token_ids": token_ids.to_tensor(self.pad_token_id, shape=shape),
            "segment_ids": segment_ids.to_tensor(0, shape=shape),
            "padding_mask": tf.ones_like(token_ids).to_tensor(0, shape=shape),
        }
        if unbatched:
            outputs = {key: value[0] for key, value in outputs.items()}
        return outputs

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "sequence_length": self.sequence_length,
                "cls_token_id": self.cls_token_id,
                "sep_token_id": self.sep_token_id,
                "pad_token_id": self.pad_token_id,
                "truncate": self.truncate,
                "dynamic_padding": self.dynamic_padding,
            }
        )
        return config
