import math

import keras

from keras_bert.preprocessing.masked_lm_masker import MaskedLMMasker
from keras_bert.preprocessing.preprocessing_layer import tf_preprocessing
from keras_bert.preprocessing.preprocessor import Preprocessor
from keras_bert.preprocessing.tensorflow_modules import tf


@keras.saving.register_keras_serializable(package="keras_bert")
class BertMaskedLMPreprocessor(Preprocessor):
    """Text -> masked-LM (and next-sentence) batches for `BertPretrainer`.

    Tokenizes, packs `[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]` and masks
    with `MaskedLMMasker` (15% of the tokens, 80% `[MASK]` / 10% random /
    10% unchanged, drawn fresh on every call), returning `(x, y,
    sample_weight)` for `BertPretrainer.fit`.

    `x` is a batch of strings (one segment per row) or a tuple `(first,
    second)` of two batches; a `tf.data` dataset of `(first, second)` text
    elements also works (Keras hands them over as `x, y`, and labels are
    never strings). Token ids (`tf.RaggedTensor` of ints) skip the
    tokenizer, so pairs built elsewhere can be fed as they are (the
    pretraining job does). With `next_sentence_prediction=True`, `x` must
    be pairs in which `second` follows `first` in the text, and `y` the
    optional IsNext labels (1 IsNext, 0 NotNext). Without `y`, NotNext
    pairs are made in the batch: each row's second segment is replaced,
    with probability 1/2, by the second segment of another row of the same
    batch (a row alone in its batch stays IsNext).

    Outputs: `x` with `token_ids`, `segment_ids`, `padding_mask` and
    `mask_positions` (`(batch, mask_selection_length)`); `y`
    `{"mlm_logits": mask_ids}` plus `"nsp_logits"` (the labels) with next
    sentence prediction; `sample_weight` the same keys with `mask_weights`
    (0 for unused mask slots) and 1 per NSP example.

    Args:
        tokenizer: `keras_bert.BertTokenizer`.
        sequence_length: int. Packed length.
        truncate: str. "longest_first" or "waterfall" (see `BertPacker`).
        mask_selection_rate: float. Share of the tokens to predict.
        mask_selection_length: int or None. Predictions per sequence; None
            is `ceil(mask_selection_rate * sequence_length)`.
        mask_token_rate: float. Share of predictions shown as `[MASK]`.
        random_token_rate: float. Share shown as a random token.
        whole_word_masking: bool. Mask every piece of a word together.
        next_sentence_prediction: bool. Make next-sentence labels; must
            match the `BertPretrainer` that carries the preprocessor.
        seed: int or None. Seeds the masks and the NotNext pairing.

    Example:
    >>> tokenizer = keras_bert.BertTokenizer(
    ...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat",
    ...      "sat", "on", "mat", "."])
    >>> pre = keras_bert.BertMaskedLMPreprocessor(
    ...     tokenizer, sequence_length=10, mask_selection_rate=0.3, seed=0)
    >>> x, y, w = pre(["the cat sat on the mat ."])
    >>> sorted(x), tuple(y["mlm_logits"].shape)
    (['mask_positions', 'padding_mask', 'segment_ids', 'token_ids'], (1, 3))
    """

    def __init__(
        self,
        tokenizer,
        sequence_length=512,
        truncate="longest_first",
        mask_selection_rate=0.15,
        mask_selection_length=None,
        mask_token_rate=0.8,
        random_token_rate=0.1,
        whole_word_masking=False,
        next_sentence_prediction=False,
        seed=None,
        **kwargs,
    ):
        super().__init__(tokenizer, sequence_length=sequence_length,
                         truncate=truncate, **kwargs)
        if mask_selection_length is None:
            mask_selection_length = math.ceil(
                mask_selection_rate * sequence_length)
        self.mask_selection_rate = mask_selection_rate
        self.mask_selection_length = mask_selection_length
        self.mask_token_rate = mask_token_rate
        self.random_token_rate = random_token_rate
        self.whole_word_masking = whole_word_masking
        self.next_sentence_prediction = next_sentence_prediction
        self.seed = seed
        self.masker = MaskedLMMasker.from_tokenizer(
            tokenizer,
            mask_selection_rate=mask_selection_rate,
            mask_selection_length=mask_selection_length,
            mask_token_rate=mask_token_rate,
            random_token_rate=random_token_rate,
            whole_word_masking=whole_word_masking,
            seed=seed,
        )
        with tf.device("CPU"):
            # A stream apart from the masker's, so pairing does not shift
            # the masks.
            self._pairing = (
                tf.random.Generator.from_non_deterministic_state()
                if seed is None else tf.random.Generator.from_seed(seed + 1)
            )

    def _token_ids(self, segment):
        if isinstance(segment, tf.RaggedTensor):
            return segment if segment.dtype.is_integer else self.tokenizer(
                segment)
        segment = tf.convert_to_tensor(segment)
        if segment.dtype == tf.string:
            return self.tokenizer(segment)
        return tf.RaggedTensor.from_tensor(segment)

    def _pair_within_batch(self, second, seed):
        """`(second, is_next)`: half the rows get another row's segment."""
        rows = second.nrows(out_type=tf.int32)
        if seed is None:
            seed = self._pairing.make_seeds(1)[:, 0]
        keep_seed, offset_seed = tf.unstack(
            tf.random.experimental.stateless_split(seed, 2))
        keep = tf.random.stateless_uniform([rows], keep_seed) < 0.5
        offset = tf.random.stateless_uniform(
            [], offset_seed, 1, tf.maximum(rows, 2), tf.int32)
        own = tf.range(rows)
        partner = tf.where(keep, own, (own + offset) % rows)
        is_next = tf.cast(tf.equal(partner, own), tf.int32)
        return tf.gather(second, partner), is_next

    @tf_preprocessing
    def call(self, x, y=None, sample_weight=None, seed=None):
        """Returns `(x, y, sample_weight)` for `BertPretrainer.fit`.

        `seed`, an optional int `[2]` tensor, makes the masks and the
        NotNext pairing a function of it alone (see `MaskedLMMasker.call`);
        the pretraining pipeline passes each batch's index.
        """
        if (not isinstance(x, tuple) and isinstance(y, tf.Tensor)
                and y.dtype == tf.string):
            # A dataset of (first, second) text: labels are never strings.
            x, y = (x, y), None
        is_pair = isinstance(x, tuple)
        if is_pair and len(x) != 2:
            raise ValueError(
                f"BertMaskedLMPreprocessor takes one segment or a (first, "
                f"second) pair; got a tuple of {len(x)}."
            )
        if self.next_sentence_prediction and not is_pair:
            raise ValueError(
                "next_sentence_prediction=True needs (first, second) pairs "
                "of consecutive text; got one segment per row. Pass pairs, "
                "or pretrain masked LM only (next_sentence_prediction=False "
                "here and on the BertPretrainer)."
            )
        if y is not None and not self.next_sentence_prediction:
            raise ValueError(
                "BertMaskedLMPreprocessor got labels `y`, which are "
                "next-sentence labels; with next_sentence_prediction=False "
                "the targets are the masked tokens, so pass text alone."
            )
        segments = tuple(map(self._token_ids, x if is_pair else (x,)))
        if seed is not None:
            seed = tf.cast(seed, tf.int64)
            seed, pairing_seed = tf.unstack(
                tf.random.experimental.stateless_split(seed, 2))
        if self.next_sentence_prediction and y is None:
            second, y = self._pair_within_batch(
                segments[1], None if seed is None else pairing_seed)
            segments = (segments[0], second)
        features = self.masker(self.packer(segments), seed=seed)
        labels = {"mlm_logits": features.pop("mask_ids")}
        weights = {"mlm_logits": features.pop("mask_weights")}
        if self.next_sentence_prediction:
            labels["nsp_logits"] = tf.cast(y, tf.int32)
            weights["nsp_logits"] = tf.ones_like(labels["nsp_logits"],
                                                 tf.float32)
        if sample_weight is not None:
            sample_weight = tf.cast(sample_weight, tf.float32)
            weights = {key: value * (sample_weight[:, tf.newaxis]
                                     if key == "mlm_logits" else sample_weight)
                       for key, value in weights.items()}
        return features, labels, weights

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "mask_selection_rate": self.mask_selection_rate,
                "mask_selection_length": self.mask_selection_length,
                "mask_token_rate": self.mask_token_rate,
                "random_token_rate": self.random_token_rate,
                "whole_word_masking": self.whole_word_masking,
                "next_sentence_prediction": self.next_sentence_prediction,
                "seed": self.seed,
            }
        )
        return config
