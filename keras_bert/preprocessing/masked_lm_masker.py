import keras
import numpy as np

from keras_bert.preprocessing.preprocessing_layer import PreprocessingLayer
from keras_bert.preprocessing.preprocessing_layer import tf_preprocessing
from keras_bert.preprocessing.tensorflow_modules import tf


def _check_rate(name, value):
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"`{name}` must be in [0, 1]; got {value}.")


@keras.saving.register_keras_serializable(package="keras_bert")
class MaskedLMMasker(PreprocessingLayer):
    """Masks token ids for masked language modelling, BERT's way.

    Per sequence it selects `round(mask_selection_rate * n)` of the `n`
    selectable positions (at least one when `n > 0`, at most
    `mask_selection_length`), never a token in `unselectable_token_ids`.
    Each selected token is replaced by `[MASK]` with probability
    `mask_token_rate`, by a random token with probability
    `random_token_rate`, and left unchanged otherwise (BERT's 80/10/10). The
    random token is drawn uniformly from the vocabulary minus
    `unselectable_token_ids`, `mask_token_id` and `excluded_random_token_ids`.
    The targets are the original ids at every selected position.

    With `whole_word_masking=True` words are selected instead of tokens: a
    word is a token plus the continuation pieces ("##...") that follow it,
    and all its pieces are selected together. Words are added in random
    order while the total stays within the budget above.

    Randomness comes from a `tf.random.Generator` seeded with `seed`: the
    same seed gives the same masks, and each pass over a `tf.data` pipeline
    draws fresh ones. With a parallel `map` the order in which batches draw
    from the generator can vary, so for bit-exact reruns map sequentially.

    Inputs are token ids (dense `[batch, length]` with padding in
    `unselectable_token_ids`, ragged `[batch, (length)]`, or unbatched
    `[length]`), or a dict with a `"token_ids"` key (e.g. `BertPacker`
    output), whose other entries pass through. Outputs: `token_ids` (the
    corrupted ids, same layout as the input), and `[batch,
    mask_selection_length]` `mask_positions` (int32, ascending), `mask_ids`
    (int32 original ids), `mask_weights` (float32, 1 for a selection, 0 for
    padding). Without `mask_selection_length` they are padded to the batch's
    largest selection count.

    Args:
        vocabulary_size: int.
        mask_token_id: int. Id of `[MASK]`.
        mask_selection_rate: float. Share of selectable tokens to select.
        mask_selection_length: int or None. Maximum selections per sequence
            (BERT uses 20 for 128 tokens, 76 for 512).
        mask_token_rate: float. Share of selections replaced by `[MASK]`.
        random_token_rate: float. Share replaced by a random token.
        unselectable_token_ids: list of int. Never selected (`[CLS]`,
            `[SEP]`, `[PAD]`) and never drawn as random tokens.
        excluded_random_token_ids: list of int or None. Also never drawn as
            random tokens (e.g. `[UNK]`, `[unused*]`).
        whole_word_masking: bool.
        continuation_token_ids: list of int. Ids of "##" pieces; needed for
            whole-word masking. `from_tokenizer` fills it in.
        seed: int or None.

    Example:

    >>> masker = keras_bert.MaskedLMMasker(
    ...     vocabulary_size=30522, mask_selection_length=4, seed=1)
    >>> out = masker([[101, 2023, 2003, 1037, 3231, 102, 0, 0]])
    >>> sorted(out)
    ['mask_ids', 'mask_positions', 'mask_weights', 'token_ids']
    """

    def __init__(
        self,
        vocabulary_size,
        mask_token_id=103,
        mask_selection_rate=0.15,
        mask_selection_length=None,
        mask_token_rate=0.8,
        random_token_rate=0.1,
        unselectable_token_ids=(0, 101, 102),
        excluded_random_token_ids=None,
        whole_word_masking=False,
        continuation_token_ids=None,
        seed=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        _check_rate("mask_selection_rate", mask_selection_rate)
        _check_rate("mask_token_rate", mask_token_rate)
        _check_rate("random_token_rate", random_token_rate)
        _check_rate("mask_token_rate + random_token_rate",
                    mask_token_rate + random_token_rate)
        if not 0 <= mask_token_id < vocabulary_size:
            raise ValueError(
                f"`mask_token_id={mask_token_id}` is outside the vocabulary "
                f"of {vocabulary_size} tokens."
            )
        if mask_selection_length is not None and mask_selection_length < 1:
            raise ValueError(
                "`mask_selection_length` must be None or >= 1; got "
                f"{mask_selection_length}."
            )
        if whole_word_masking and continuation_token_ids is None:
            raise ValueError(
                "`whole_word_masking=True` needs `continuation_token_ids` "
                "(the ids of '##' pieces); build the masker with "
                "`MaskedLMMasker.from_tokenizer(tokenizer, "
                "whole_word_masking=True)`."
            )
        self.vocabulary_size = vocabulary_size
        self.mask_token_id = mask_token_id
        self.mask_selection_rate = mask_selection_rate
        self.mask_selection_length = mask_selection_length
        self.mask_token_rate = mask_token_rate
        self.random_token_rate = random_token_rate
        self.unselectable_token_ids = [int(i) for i in unselectable_token_ids]
        self.excluded_random_token_ids = (
            None if excluded_random_token_ids is None
            else [int(i) for i in excluded_random_token_ids]
        )
        self.whole_word_masking = whole_word_masking
        self.continuation_token_ids = (
            None if continuation_token_ids is None
            else [int(i) for i in continuation_token_ids]
        )
        self.seed = seed

        excluded = set(self.unselectable_token_ids) | {mask_token_id}
        excluded |= set(self.excluded_random_token_ids or ())
        self._random_pool = np.setdiff1d(
            np.arange(vocabulary_size, dtype=np.int32),
            np.array(sorted(excluded), dtype=np.int32),
        )
        if random_token_rate > 0 and self._random_pool.size == 0:
            raise ValueError(
                "No token is left to draw random replacements from; every id "
                "is unselectable or excluded."
            )
        self._is_continuation = np.zeros(vocabulary_size, dtype=bool)
        self._is_continuation[self.continuation_token_ids or []] = True
        with tf.device("CPU"):
            self._generator = (
                tf.random.Generator.from_non_deterministic_state()
                if seed is None else tf.random.Generator.from_seed(seed)
            )

    @classmethod
    def from_tokenizer(cls, tokenizer, **kwargs):
        """A masker for `tokenizer`'s vocabulary and special tokens.

        Bracketed tokens (`[UNK]`, `[unusedN]`, ...) are excluded from the
        random replacements; `kwargs` override any argument.
        """
        vocabulary = tokenizer.get_vocabulary()
        config = {
            "vocabulary_size": len(vocabulary),
            "mask_token_id": tokenizer.mask_token_id,
            "unselectable_token_ids": [tokenizer.cls_token_id,
                                       tokenizer.sep_token_id,
                                       tokenizer.pad_token_id],
            "excluded_random_token_ids": [
                i for i, t in enumerate(vocabulary)
                if t.startswith("[") and t.endswith("]")
            ],
        }
        if kwargs.get("whole_word_masking"):
            config["continuation_token_ids"] = [
                i for i, t in enumerate(vocabulary) if t.startswith("##")
            ]
        config.update(kwargs)
        return cls(**config)

    def _select(self, token_ids, seed):
        """Boolean `[batch, length]` of the positions to predict."""
        batch_size, length = tf.shape(token_ids)[0], tf.shape(token_ids)[1]
        eligible = token_ids >= 0  # ragged inputs are padded with -1
        for token_id in self.unselectable_token_ids:
            eligible &= token_ids != token_id
        if self.whole_word_masking:
            is_continuation = tf.gather(
                self._is_continuation,
                tf.clip_by_value(token_ids, 0, self.vocabulary_size - 1),
            )
            previous_eligible = tf.pad(eligible[:, :-1], [[0, 0], [1, 0]])
            starts = eligible & (~is_continuation | ~previous_eligible)
        else:
            starts = eligible
        starts = tf.cast(starts, tf.int32)
        word_index = tf.cumsum(starts, axis=1) - 1
        num_words = tf.reduce_sum(starts, axis=1)
        num_eligible = tf.reduce_sum(tf.cast(eligible, tf.int32), axis=1)
        target = tf.cast(
            tf.round(tf.cast(num_eligible, tf.float32)
                     * self.mask_selection_rate),
            tf.int32,
        )
        target = tf.where(num_eligible > 0, tf.maximum(target, 1), 0)
        if self.mask_selection_length is not None:
            target = tf.minimum(target, self.mask_selection_length)
        # Tokens per word, with words indexed per row by `word_index`.
        rows = tf.range(batch_size)[:, tf.newaxis] * length
        segment = tf.where(eligible, rows + word_index, batch_size * length)
        word_length = tf.math.unsorted_segment_sum(
            tf.ones_like(token_ids), segment, batch_size * length + 1
        )[:-1]
        word_length = tf.reshape(word_length, [batch_size, length])
        # Visit words in random order; take each one that still fits.
        slots = tf.range(length)[tf.newaxis, :]
        is_word = slots < num_words[:, tf.newaxis]
        scores = tf.random.stateless_uniform([batch_size, length], seed)
        order = tf.argsort(tf.where(is_word, scores, 2.0), axis=1)
        sorted_length = tf.gather(word_length, order, batch_dims=1)
        sorted_is_word = tf.gather(is_word, order, batch_dims=1)
        if self.whole_word_masking:
            take = self._take_whole_words(sorted_length, sorted_is_word, target)
        else:  # one token per word: the first `target` words are taken
            take = sorted_is_word & (slots < target[:, tf.newaxis])
        take_word = tf.gather(take, tf.argsort(order, axis=1), batch_dims=1)
        return eligible & tf.gather(
            take_word, tf.maximum(word_index, 0), batch_dims=1
        )

    def _take_whole_words(self, sorted_length, sorted_is_word, target):
        """BERT's greedy pass: skip a word that would overshoot `target`.

        A sequential scan over the (random) word order, batched over rows.
        If nothing fits, the first word is taken when it fits within
        `mask_selection_length`, so each sequence predicts something.
        """

        def step(taken, slot):
            word_length, is_word = slot
            fits = is_word & (taken + word_length <= target)
            return taken + tf.where(fits, word_length, 0)

        totals = tf.transpose(tf.scan(
            step,
            (tf.transpose(sorted_length), tf.transpose(sorted_is_word)),
            initializer=tf.zeros_like(target),
        ))
        take = totals > tf.pad(totals[:, :-1], [[0, 0], [1, 0]])
        first = tf.reduce_sum(sorted_length[:, :1], axis=1)
        limit = self.mask_selection_length or tf.shape(sorted_length)[1]
        fallback = (
            tf.reduce_any(sorted_is_word, axis=1)
            & (first <= limit)
            & ~tf.reduce_any(take, axis=1)
        )
        slots = tf.range(tf.shape(take)[1])[tf.newaxis, :]
        return take | (fallback[:, tf.newaxis] & (slots == 0))

    def _corrupt(self, token_ids, selected, seeds):
        shape = tf.shape(token_ids)
        draw = tf.random.stateless_uniform(shape, seeds[:, 1])
        use_mask = selected & (draw < self.mask_token_rate)
        use_random = selected & ~use_mask & (
            draw < self.mask_token_rate + self.random_token_rate
        )
        corrupted = token_ids
        if self._random_pool.size:  # empty only when random_token_rate == 0
            draw = tf.random.stateless_uniform(
                shape, seeds[:, 2], minval=0, maxval=self._random_pool.size,
                dtype=tf.int32,
            )
            random_ids = tf.gather(tf.constant(self._random_pool), draw)
            corrupted = tf.where(use_random, random_ids, token_ids)
        return tf.where(use_mask, self.mask_token_id, corrupted)

    @tf_preprocessing
    def call(self, inputs, seed=None):
        """Masks a batch.

        Args:
            inputs: token ids, or a dict with `token_ids` (see the class).
            seed: optional int `[2]` tensor. When given, the masks are a
                function of it alone (stateless), e.g. of a batch's index
                in a stream, so a pipeline replays the same masks however
                its map is parallelized or resumed; otherwise they come
                from the layer's seeded generator.
        """
        features = dict(inputs) if isinstance(inputs, dict) else {}
        token_ids = features.get("token_ids") if features else inputs
        if token_ids is None:
            raise ValueError("A dict input needs a 'token_ids' entry.")
        if not isinstance(token_ids, tf.RaggedTensor):
            token_ids = tf.convert_to_tensor(token_ids)
        if not token_ids.dtype.is_integer:
            raise TypeError(
                "MaskedLMMasker takes integer token ids; got dtype "
                f"{token_ids.dtype.name}."
            )
        ragged = isinstance(token_ids, tf.RaggedTensor)
        unbatched = not ragged and token_ids.shape.rank == 1
        if unbatched:
            token_ids = token_ids[tf.newaxis]
        dense = token_ids.to_tensor(-1) if ragged else token_ids
        dense = tf.cast(dense, tf.int32)

        if seed is None:
            seeds = self._generator.make_seeds(3)
        else:
            seeds = tf.transpose(tf.random.experimental.stateless_split(
                tf.cast(seed, tf.int64), 3))
        selected = self._select(dense, seeds[:, 0])
        corrupted = self._corrupt(dense, selected, seeds)
        length = tf.shape(dense)[1]
        positions = tf.broadcast_to(tf.range(length), tf.shape(dense))
        positions = tf.ragged.boolean_mask(positions, selected)
        shape = (None if self.mask_selection_length is None
                 else [None, self.mask_selection_length])
        outputs = {
            "token_ids": (
                tf.RaggedTensor.from_tensor(
                    corrupted, lengths=token_ids.row_lengths())
                if ragged else corrupted
            ),
            "mask_positions": positions.to_tensor(0, shape=shape),
            "mask_ids": tf.ragged.boolean_mask(dense, selected).to_tensor(
                0, shape=shape),
            "mask_weights": tf.ones_like(positions, tf.float32).to_tensor(
                0.0, shape=shape),
        }
        if unbatched:
            outputs = {key: value[0] for key, value in outputs.items()}
        features.update(outputs)
        return features

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "mask_token_id": self.mask_token_id,
                "mask_selection_rate": self.mask_selection_rate,
                "mask_selection_length": self.mask_selection_length,
                "mask_token_rate": self.mask_token_rate,
                "random_token_rate": self.random_token_rate,
                "unselectable_token_ids": self.unselectable_token_ids,
                "excluded_random_token_ids": self.excluded_random_token_ids,
                "whole_word_masking": self.whole_word_masking,
                "continuation_token_ids": self.continuation_token_ids,
                "seed": self.seed,
            }
        )
        return config
