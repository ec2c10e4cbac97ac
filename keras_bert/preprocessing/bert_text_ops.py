"""BERT text normalization and word splitting as TF ops.

The rules follow Hugging Face `tokenizers`' `BertNormalizer` and
`BertPreTokenizer` (themselves the original BERT `BasicTokenizer`), so that
token ids match `BertTokenizerFast`:

1. Invalid UTF-8 bytes become U+FFFD (then dropped by step 2).
2. Drop NUL, U+FFFD, control characters (Cc, except tab/newline/carriage
   return, which are whitespace), format characters (Cf: zero-width space and
   joiner, soft hyphen, BOM, ...) and private-use characters (Co).
3. `strip_accents`: NFD, then drop nonspacing marks (Mn).
4. `lowercase`: Unicode lowercase, one character at a time (so "Σ" always
   lowercases to "σ", never to the word-final "ς").
5. Split on whitespace (tab, newline, carriage return, Unicode Z*), and make
   every punctuation character (Unicode P*, plus all ASCII non-alphanumeric
   symbols such as `$+<=>^|~`) and CJK ideograph a word of its own.

Every step acts on single characters, which is what lets
`char_offsets_to_original` map tokens back to the original text.
"""

import re

from keras_bert.preprocessing.tensorflow_modules import tf
from keras_bert.preprocessing.tensorflow_modules import tf_text

# The CJK ranges of HF tokenizers' `is_chinese_char`. (The original BERT code
# starts the extension-E range at U+2B820; HF starts it at U+2B920.)
_CJK = (
    r"\x{4E00}-\x{9FFF}\x{3400}-\x{4DBF}\x{20000}-\x{2A6DF}"
    r"\x{2A700}-\x{2B73F}\x{2B740}-\x{2B81F}\x{2B920}-\x{2CEAF}"
    r"\x{F900}-\x{FAFF}\x{2F800}-\x{2FA1F}"
)
_PUNCTUATION = r"!-/:-@\[-`{-~\p{P}"
_DROPPED = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\p{Cf}\p{Co}\x{FFFD}]"
_WHITESPACE = r"[\t\n\r\p{Z}]+"


def sanitize_utf8(text):
    """Replaces invalid UTF-8 sequences with U+FFFD (never raises)."""
    return tf.strings.unicode_transcode(
        text, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
    )


def special_tokens_pattern(tokens):
    """An RE2 pattern matching any of `tokens` (longest first)."""
    return "|".join(re.escape(t) for t in sorted(tokens, key=len, reverse=True))


def normalize(text, lowercase, strip_accents):
    """Steps 2-4 of the module docstring on a string tensor of any shape."""
    text = tf.strings.regex_replace(text, _DROPPED, "")
    if strip_accents:
        text = tf_text.normalize_utf8(text, "NFD")
        text = tf.strings.regex_replace(text, r"\p{Mn}", "")
    if lowercase:
        # ICU lowercases a word-final capital sigma to "ς"; BERT lowercases
        # character by character, which always gives "σ".
        text = tf.strings.regex_replace(text, "Σ", "σ")
        text = tf.strings.lower(text, encoding="utf-8")
    return text


def _hide_nul(text):
    # tf_text.regex_split stops at a NUL byte. \x01 is dropped by `normalize`
    # just the same, and has the same length, so offsets do not move.
    return tf.strings.regex_replace(text, r"\x00", "\x01")


def normalize_text(text, lowercase, strip_accents, special_pattern=None):
    """`normalize` on `[batch]` text, leaving special-token matches as is.

    With `special_pattern`, special tokens are found in the original text
    (as Hugging Face does) and kept verbatim so `split_words` can keep them
    whole.
    """
    if special_pattern is None:
        return normalize(text, lowercase, strip_accents)
    text = _hide_nul(text)
    pieces = tf_text.regex_split(text, special_pattern, special_pattern)
    flat = pieces.flat_values
    is_special = tf.strings.regex_full_match(flat, special_pattern)
    flat = tf.where(is_special, flat, normalize(flat, lowercase, strip_accents))
    return tf.strings.reduce_join(pieces.with_flat_values(flat), axis=1)


def _split_patterns(split_cjk, special_pattern):
    isolated = "[" + _PUNCTUATION + (_CJK if split_cjk else "") + "]"
    if special_pattern is not None:
        # RE2 alternation is leftmost-first: "[MASK]" wins over "[".
        isolated = special_pattern + "|" + isolated
    return _WHITESPACE + "|" + isolated, isolated


def split_words(text, split_cjk, special_pattern=None):
    """Step 5: a `[batch]` string tensor -> `[batch, (words)]` words."""
    delimiters, kept = _split_patterns(split_cjk, special_pattern)
    return tf_text.regex_split(text, delimiters, kept)


def split_words_with_offsets(text, split_cjk, special_pattern=None):
    """`split_words` plus byte offsets of each word in `text`."""
    delimiters, kept = _split_patterns(split_cjk, special_pattern)
    return tf_text.regex_split_with_offsets(text, delimiters, kept)


def _count_at_or_before(sorted_values, positions):
    """Per row, how many of `sorted_values` are <= each of `positions`."""
    dense_values = tf.cast(sorted_values, tf.int64).to_tensor(
        default_value=tf.int64.max)
    dense_positions = tf.cast(positions, tf.int64).to_tensor()
    counts = tf.searchsorted(dense_values, dense_positions, side="right")
    return tf.RaggedTensor.from_tensor(counts, lengths=positions.row_lengths())


def _inside_matches(text, char_starts, pattern):
    """`[batch, (characters)]` bool: is the character inside a match?"""
    text = _hide_nul(text)
    pieces, starts, ends = tf_text.regex_split_with_offsets(
        text, pattern, pattern)
    matched = pieces.with_flat_values(
        tf.strings.regex_full_match(pieces.flat_values, pattern))
    match_starts = tf.ragged.boolean_mask(starts, matched)
    match_ends = tf.ragged.boolean_mask(ends, matched)
    # Matches are disjoint: inside one iff more have started than ended.
    return _count_at_or_before(match_starts, char_starts) > (
        _count_at_or_before(match_ends, char_starts))


def normalize_characters(text, lowercase, strip_accents, special_pattern=None):
    """Normalizes every character of `[batch]` text on its own.

    Characters inside special-token matches are kept as is (see
    `normalize_text`).

    Returns `(normalized_text, byte_starts, byte_ends)`: the normalized
    strings, and two `[batch, (characters)]` int32 ragged tensors giving, for
    original character `i`, the byte range of its normalized form in the
    normalized string (empty for dropped characters).
    """
    chars, char_starts = tf.strings.unicode_split_with_offsets(
        text, "UTF-8", errors="replace")
    normalized = tf.ragged.map_flat_values(
        normalize, chars, lowercase, strip_accents
    )
    if special_pattern is not None:
        inside = _inside_matches(text, char_starts, special_pattern)
        normalized = normalized.with_flat_values(tf.where(
            inside.flat_values, chars.flat_values, normalized.flat_values))
    byte_lengths = tf.strings.length(normalized.flat_values)
    # Per-row cumulative sums, done on the flat values in one pass.
    flat_ends = tf.cumsum(byte_lengths)
    row_start_totals = tf.gather(
        tf.concat([[0], flat_ends], axis=0), chars.row_starts()
    )
    flat_ends -= tf.repeat(row_start_totals, chars.row_lengths())
    byte_ends = chars.with_flat_values(flat_ends)
    byte_starts = chars.with_flat_values(flat_ends - byte_lengths)
    joined = tf.strings.reduce_join(normalized, axis=-1)
    return joined, byte_starts, byte_ends


def piece_offsets_in_text(starts, ends, word_starts, word_ends, whole_word):
    """Byte offsets of word pieces in the text they were split from.

    Args:
        starts, ends: `[batch, (words), (pieces)]` offsets within each word
            (FastWordpieceTokenizer's).
        word_starts, word_ends: `[batch, (words)]` offsets of the words.
        whole_word: bool per word (flat): its single piece spans the whole
            word (a word replaced by [UNK] for being too long).

    Returns:
        `(starts, ends)`, `[batch, (pieces)]`.
    """
    pieces_per_word = starts.values.row_lengths()
    word_start = tf.repeat(word_starts.flat_values, pieces_per_word)
    word_end = tf.repeat(word_ends.flat_values, pieces_per_word)
    whole_word = tf.repeat(whole_word, pieces_per_word)
    flat_starts = word_start + starts.flat_values
    flat_ends = tf.where(whole_word, word_end, word_start + ends.flat_values)
    starts = starts.merge_dims(1, 2)
    return (starts.with_flat_values(flat_starts),
            starts.with_flat_values(flat_ends))


def char_offsets_to_original(byte_starts, byte_ends, starts, ends):
    """Maps byte offsets in normalized text to character offsets in the input.

    Args:
        byte_starts, byte_ends: from `normalize_characters`.
        starts, ends: `[batch, (tokens)]` byte offsets into the normalized
            text (end exclusive).

    Returns:
        `(starts, ends)` as character (Unicode code point) offsets into the
        original text. A token made of part of a character's normalized form
        (a Hangul jamo of a syllable) maps to that whole character.
    """
    # Start: characters whose normalized bytes all lie before the token.
    # End: characters whose normalized bytes begin before the token's end.
    char_starts = _count_at_or_before(byte_ends, starts)
    char_ends = _count_at_or_before(byte_starts, ends - 1)
    return tf.cast(char_starts, tf.int32), tf.cast(char_ends, tf.int32)
