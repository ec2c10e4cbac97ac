"""Token ids and packed rows of Python strings without TensorFlow.

`BertTokenizer` is TensorFlow graph code, so that it runs in `tf.data` and
in an exported SavedModel. A short job on JAX or PyTorch (one sentence to
embed) would import TensorFlow for the tokenizer alone, most of its start
(docs/performance.md, "Cold start"). Hugging Face's `tokenizers`, the
library `BertTokenizerFast` runs on, implements the same rules (BERT's
cleaning, CJK splitting, lowercasing and accent stripping, punctuation
splitting, greedy longest-match-first WordPiece); configured from a
`BertTokenizer`'s settings it gives the same ids
(tests/preprocessing/test_host_preprocessing.py compares them on SST-2,
MRPC, CoNLL-2003 and SQuAD texts and on edge cases, for each setting).
"""

import weakref

import keras
import numpy as np

# tokenizer layer -> (its settings, the `tokenizers.Tokenizer` built on them)
_BUILT = weakref.WeakKeyDictionary()


def _settings(tokenizer):
    return (tokenizer.lowercase, tokenizer.strip_accents, tokenizer.split_cjk,
            tokenizer.max_input_chars_per_word, tokenizer.unknown_token,
            tokenizer.special_tokens_in_strings,
            tokenizer.vocabulary_size())


def _build(tokenizers, tokenizer):
    ids = {token: index for index, token in
           enumerate(tokenizer.get_vocabulary())}
    built = tokenizers.Tokenizer(tokenizers.models.WordPiece(
        ids, unk_token=tokenizer.unknown_token,
        max_input_chars_per_word=tokenizer.max_input_chars_per_word,
        continuing_subword_prefix="##"))
    # strip_accents None follows lowercase in both libraries.
    built.normalizer = tokenizers.normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=tokenizer.split_cjk,
        strip_accents=tokenizer.strip_accents,
        lowercase=tokenizer.lowercase)
    built.pre_tokenizer = tokenizers.pre_tokenizers.BertPreTokenizer()
    if tokenizer.special_tokens_in_strings:
        # Matched in the raw text, before normalization, as the layer does.
        built.add_special_tokens([
            tokenizer.unknown_token, tokenizer.pad_token, tokenizer.cls_token,
            tokenizer.sep_token, tokenizer.mask_token])
    return built


def host_token_ids(tokenizer, texts):
    """`tokenizer.tokenize(texts)` as lists of ints, without TensorFlow.

    Args:
        tokenizer: a `keras_bert.BertTokenizer`.
        texts: list of str.

    Returns:
        A list with one list of token ids per text, or None when the
        `tokenizers` package is not installed (then use the layer).

    Example:
    >>> tokenizer = keras_bert.BertTokenizer(
    ...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "qu",
    ...      "##ick", "fox", "."])
    >>> host_token_ids(tokenizer, ["The quick fox.", "Fox"])
    [[5, 6, 7, 8, 9], [8]]
    """
    settings = _settings(tokenizer)
    settings_and_built = _BUILT.get(tokenizer)
    if settings_and_built is None or settings_and_built[0] != settings:
        try:
            import tokenizers
        except ImportError:
            return None
        settings_and_built = (settings, _build(tokenizers, tokenizer))
        _BUILT[tokenizer] = settings_and_built
    encodings = settings_and_built[1].encode_batch(
        list(texts), add_special_tokens=False)
    return [encoding.ids for encoding in encodings]


def token_id_lists(tokenizer, texts):
    """`tokenizer`'s ids of `texts` as lists of ints: by `host_token_ids`
    under JAX and PyTorch (no TensorFlow import), by the layer under
    TensorFlow or where `tokenizers` is not installed.

    Example:
    >>> tokenizer = keras_bert.BertTokenizer(
    ...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "fox"])
    >>> token_id_lists(tokenizer, ["the fox", "fox"])
    [[5, 6], [6]]
    """
    texts = list(texts)
    if keras.config.backend() != "tensorflow":
        token_ids = host_token_ids(tokenizer, texts)
        if token_ids is not None:
            return token_ids
    return [[int(i) for i in row] for row in tokenizer.tokenize(texts).to_list()]


def pack_single_segments(token_ids, sequence_length, cls_token_id,
                         sep_token_id, pad_token_id):
    """`[CLS] ids [SEP]` rows padded to the longest: what `BertPacker` with
    `dynamic_padding=True` gives for one segment, as NumPy.

    Args:
        token_ids: list of lists of int.
        sequence_length: int. The longest row; longer segments lose their
            end.
        cls_token_id, sep_token_id, pad_token_id: int.

    Returns:
        A dict of int32 arrays `(len(token_ids), longest row)`:
        `token_ids`, `segment_ids` (zeros) and `padding_mask`.

    Example:
    >>> packed = pack_single_segments([[5, 6, 7], [8]], 4, 101, 102, 0)
    >>> packed["token_ids"].tolist()
    [[101, 5, 6, 102], [101, 8, 102, 0]]
    """
    budget = sequence_length - 2
    rows = [[cls_token_id, *ids[:budget], sep_token_id] for ids in token_ids]
    width = max(map(len, rows), default=2)
    packed = np.full((len(rows), width), pad_token_id, "int32")
    padding_mask = np.zeros((len(rows), width), "int32")
    for index, row in enumerate(rows):
        packed[index, :len(row)] = row
        padding_mask[index, :len(row)] = 1
    return {"token_ids": packed, "segment_ids": np.zeros_like(packed),
            "padding_mask": padding_mask}
