"""Learning a WordPiece vocabulary from a text corpus."""

import collections
import itertools
import os

import tensorflow as tf
from tensorflow_text.tools.wordpiece_vocab import (
    wordpiece_tokenizer_learner_lib as learner,
)

from keras_bert.preprocessing import bert_text_ops

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def _lines(paths):
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            yield from f


def _text_batches(data, batch_size):
    """Yields batches of strings from paths, a dataset or an iterable."""
    if isinstance(data, tf.data.Dataset):
        if data.element_spec.shape.rank:
            data = data.unbatch()
        yield from data.batch(batch_size)
        return
    paths = None
    if isinstance(data, (str, os.PathLike)):
        paths = [data]
    elif isinstance(data, (list, tuple)) and data and all(
        isinstance(item, os.PathLike) or os.path.isfile(item) for item in data
    ):
        paths = data
    if paths is not None:
        missing = [os.fspath(p) for p in paths if not os.path.isfile(p)]
        if missing:
            raise FileNotFoundError(f"Text files not found: {missing}.")
        data = _lines(paths)
    data = iter(data)
    while batch := list(itertools.islice(data, batch_size)):
        yield batch


def train_vocabulary(
    data,
    vocabulary_size,
    lowercase=True,
    strip_accents=None,
    split_cjk=True,
    reserved_tokens=None,
    output_path=None,
    max_unique_characters=1000,
    max_token_length=50,
    batch_size=1024,
):
    """Learns a WordPiece vocabulary with tensorflow-text's learner.

    The text is normalized and split into words exactly as `BertTokenizer`
    does (same flags), word counts are accumulated batch by batch (the corpus
    is streamed, only the counts are kept in memory), and tensorflow-text's
    `wordpiece_tokenizer_learner_lib.learn` picks the pieces: every character
    seen (as a word start and as a "##" continuation), then frequent pieces.

    The vocabulary starts with `[PAD] [UNK] [CLS] [SEP] [MASK]` (ids 0-4),
    then `reserved_tokens`, then the learned pieces. The learner searches a
    count threshold that gives about `vocabulary_size` tokens; the result has
    at most `vocabulary_size` tokens and can be up to ~5% smaller.

    Args:
        data: a text file path, a list of paths (read line by line), a
            `tf.data.Dataset` of strings, or an iterable of strings.
        vocabulary_size: int. Target size including the special tokens.
        lowercase, strip_accents, split_cjk: as for `BertTokenizer`.
        reserved_tokens: list of str or None. Extra tokens kept verbatim.
        output_path: str or None. If given, writes the vocabulary there, one
            token per line (a `vocab.txt`).
        max_unique_characters: int. Alphabet cap; words with rarer
            characters are dropped (their characters map to `[UNK]`).
        max_token_length: int. Longer words are not counted.
        batch_size: int. Lines normalized per TF call.

    Returns:
        The vocabulary, a list of str.

    Example:

    >>> vocab = keras_bert.train_vocabulary(
    ...     ["the cat sat", "the dog sat"] * 50, vocabulary_size=40)
    >>> vocab[:5]
    ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']
    """
    reserved = list(SPECIAL_TOKENS) + list(reserved_tokens or [])
    if vocabulary_size <= len(reserved):
        raise ValueError(
            f"`vocabulary_size={vocabulary_size}` leaves no room beyond the "
            f"{len(reserved)} reserved tokens."
        )
    strip = lowercase if strip_accents is None else strip_accents
    counts = collections.Counter()
    for batch in _text_batches(data, batch_size):
        with tf.device("CPU"):
            text = bert_text_ops.sanitize_utf8(
                tf.convert_to_tensor(batch, tf.string))
            text = bert_text_ops.normalize(text, lowercase, strip)
            words = bert_text_ops.split_words(text, split_cjk).flat_values
        counts.update(words.numpy().tolist())
    if not counts:
        raise ValueError("No words found in `data`; is the corpus empty?")
    word_counts = [(w.decode("utf-8"), c) for w, c in counts.items()]
    lower, upper = _threshold_bounds(word_counts, vocabulary_size,
                                     max_token_length)
    vocabulary = learner.learn(
        word_counts,
        vocab_size=vocabulary_size,
        reserved_tokens=reserved,
        max_token_length=max_token_length,
        max_unique_chars=max_unique_characters,
        lower_thresh=lower,
        upper_thresh=upper,
    )
    # The learner's threshold search can overshoot. Its pieces come ordered
    # by falling count, so drop the rarest ones from the end, keeping the
    # reserved tokens and every character (alone and as "##c").
    def essential(token):
        return (token in reserved or len(token) == 1
                or (token.startswith("##") and len(token) == 3))

    num_essential = sum(map(essential, vocabulary))
    if num_essential > vocabulary_size:
        raise ValueError(
            f"`vocabulary_size={vocabulary_size}` is smaller than the "
            f"{num_essential} reserved and single-character tokens the "
            "corpus needs; raise it or lower `max_unique_characters`."
        )
    surplus = len(vocabulary) - vocabulary_size
    if surplus > 0:
        droppable = [i for i, t in enumerate(vocabulary) if not essential(t)]
        dropped = set(droppable[-surplus:])
        vocabulary = [t for i, t in enumerate(vocabulary) if i not in dropped]
    if output_path is not None:
        with open(output_path, "w", encoding="utf-8") as f:
            f.write("".join(token + "\n" for token in vocabulary))
    return vocabulary


def _threshold_bounds(word_counts, vocabulary_size, max_token_length):
    """Where the learner searches its count threshold: `(lower, upper)`.

    At threshold t every word seen t times or more is one of the pieces,
    so the threshold that fits `vocabulary_size` is at least the count of
    the `vocabulary_size`-th most frequent word. Pieces add fewer than 8
    tokens per frequent word (about 2 on the built-in corpus), so at the
    count of the `vocabulary_size / 8`-th word the vocabulary fits. The
    learner's own search halves the range from the top word's count down
    to 1, one learner pass per halving: 14 passes for the built-in corpus
    at 8,000 tokens, 5 within these bounds. Were the upper bound too low,
    the vocabulary would come out larger and lose its rarest pieces.
    """
    ranked = sorted((count for word, count in word_counts
                     if len(word) <= max_token_length), reverse=True)
    if not ranked:
        return 1, 1

    def count_at(rank):
        return ranked[min(rank, len(ranked)) - 1]

    lower = count_at(vocabulary_size)
    return lower, max(lower, count_at(max(1, vocabulary_size // 8)))
