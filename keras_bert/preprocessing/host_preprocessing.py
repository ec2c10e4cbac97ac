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

import numpy as np

from keras_bert.preprocessing.bert_packer import truncated_lengths

# Up to this many examples, raw input (not a dataset) is preprocessed at
# once, eagerly, for `predict` and `evaluate` (`task_dataset.
# preprocessed_arrays`; `predict` first tries `BertPreprocessor.
# host_arrays`). A new tf.data iterator instantiates
# the preprocessing function again and TensorFlow optimizes its graph each
# time, most of the time of a `predict` on one sentence, while eager
# preprocessing of thousands of sentences takes a fraction of it
# (docs/performance.md, "Predict latency on raw text"). The arrays of this
# many examples of 512 tokens are 50 MB; larger inputs stream through
# `tf.data`.
MAX_EAGER_EXAMPLES = 8192

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
    (no TensorFlow import, no graph op built), by the layer where
    `tokenizers` is not installed.

    Example:
    >>> tokenizer = keras_bert.BertTokenizer(
    ...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "fox"])
    >>> token_id_lists(tokenizer, ["the fox", "fox"])
    [[5, 6], [6]]
    """
    texts = list(texts)
    token_ids = host_token_ids(tokenizer, texts)
    if token_ids is not None:
        return token_ids
    return [[int(i) for i in row] for row in tokenizer.tokenize(texts).to_list()]


def pack_segments(segments, sequence_length, cls_token_id, sep_token_id,
                  pad_token_id, truncate="longest_first",
                  dynamic_padding=False):
    """`BertPacker`'s rows, as NumPy: `[CLS] A [SEP]` or `[CLS] A [SEP] B
    [SEP]`, truncated by the same rule (`bert_packer.truncated_lengths`).

    Args:
        segments: a list of 1 or 2 segments, each a list with one list of
            token ids per example.
        sequence_length: int. The packed length (the longest with
            `dynamic_padding`).
        cls_token_id, sep_token_id, pad_token_id: int.
        truncate: "longest_first" or "waterfall".
        dynamic_padding: bool. Pad to the longest row instead.

    Returns:
        A dict of int32 arrays `(examples, length)`: `token_ids`,
        `segment_ids` and `padding_mask`.

    Example:
    >>> packed = pack_segments([[[5, 6, 7], [8]]], 4, 101, 102, 0)
    >>> packed["token_ids"].tolist()
    [[101, 5, 6, 102], [101, 8, 102, 0]]
    """
    budget = sequence_length - len(segments) - 1
    lengths = [np.array([len(ids) for ids in segment], "int32")
               for segment in segments]
    keep = truncated_lengths(lengths, budget, truncate, xp=np)
    rows, segment_rows = [], []
    for index, pieces in enumerate(zip(*segments)):
        row, ids_of_segments = [cls_token_id], [0]
        for number, ids in enumerate(pieces):
            kept = list(ids[:int(keep[number][index])]) + [sep_token_id]
            row += kept
            ids_of_segments += [number] * len(kept)
        rows.append(row)
        segment_rows.append(ids_of_segments)
    width = (max(map(len, rows), default=len(segments) + 1)
             if dynamic_padding else sequence_length)
    packed = {name: np.full((len(rows), width), fill, "int32") for name, fill
              in (("token_ids", pad_token_id), ("segment_ids", 0),
                  ("padding_mask", 0))}
    for index, (row, segment_ids) in enumerate(zip(rows, segment_rows)):
        packed["token_ids"][index, :len(row)] = row
        packed["segment_ids"][index, :len(row)] = segment_ids
        packed["padding_mask"][index, :len(row)] = 1
    return packed
