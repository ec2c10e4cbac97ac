"""The pretraining input pipeline: text -> NSP pairs -> packed, masked batches.

Two stages, so that the second can also read pairs written offline:

1. `pair_dataset`: a `tf.data.Dataset` of `(token_ids_a, token_ids_b,
   is_next)` streamed from a `TextCorpus` (tokenized many documents at a
   time, pairs built as the original `create_pretraining_data` does).
2. `batch_pairs`: shuffle, batch, then pack `[CLS] A [SEP] B [SEP]` and
   mask (fresh masks on every pass) with `BertMaskedLMPreprocessor` in a
   parallel `map` ending in `prefetch_for_fit`, giving `(x, y,
   sample_weight)` batches for `BertPretrainer.fit`.
"""

import itertools
import zlib

import numpy as np
import tensorflow as tf

from keras_bert.preprocessing import NextSentencePairBuilder
from keras_bert.preprocessing.bert_masked_lm_preprocessor import (
    BertMaskedLMPreprocessor,
)
from keras_bert.preprocessing.prefetch_for_fit import prefetch_for_fit

# A chunk of pairs: token ids of the A segments (flat) and their lengths,
# the same for B, and the labels.
_CHUNK_SPEC = (tf.TensorSpec([None], tf.int32),) * 5


def pair_dataset(
    corpus,
    tokenizer,
    sequence_length,
    split="train",
    next_sentence_prediction=True,
    short_seq_prob=0.1,
    document_buffer_size=1000,
    seed=0,
    repeat=True,
    chunk_pairs=1024,
):
    """Streams sentence pairs from a corpus as a `tf.data.Dataset`.

    Every pass shuffles the file order and draws new pairs (seeded by
    `seed` and the pass number, so a rerun sees the same stream). With
    `next_sentence_prediction=False` each example is one span of
    contiguous sentences of one document (RoBERTa-style), B is empty and
    the label is 1.

    Args:
        corpus: a `keras_bert.training.TextCorpus`.
        tokenizer: a `keras_bert.BertTokenizer`.
        sequence_length: int. Packed length; pairs hold at most
            `sequence_length - 3` tokens (2 with NSP off).
        split: "train", "heldout" or "all" (see `TextCorpus.documents`).
        next_sentence_prediction: bool.
        short_seq_prob: float. Share of shorter target lengths (BERT: 0.1).
        document_buffer_size: int. Documents held for random B segments.
        seed: int.
        repeat: bool. Loop over the corpus forever.
        chunk_pairs: int. Pairs built in Python per step of the stream.

    Returns:
        A dataset of `(int32 [None], int32 [None], int32 [])`.
    """

    def pairs():
        epoch = 0
        while True:
            epoch_seed = zlib.crc32(f"{seed}/{epoch}".encode())
            documents = corpus.documents(split, shuffle_seed=epoch_seed)
            tokenized = tokenize_documents(documents, tokenizer)
            if next_sentence_prediction:
                builder = NextSentencePairBuilder(
                    max_num_tokens=sequence_length - 3,
                    short_seq_prob=short_seq_prob,
                    document_buffer_size=document_buffer_size,
                    seed=epoch_seed,
                )
                yield from builder.build(tokenized)
            else:
                for document in tokenized:
                    for span in contiguous_spans(document, sequence_length - 2):
                        yield span, [], 1
            if not repeat:
                return
            epoch += 1

    def chunks():
        # `from_generator` converts each element it yields under the GIL;
        # yielding a thousand pairs at a time as flat arrays (split again
        # in TensorFlow) makes the stream faster, and with it the training
        # steps where the stream shares the cores with the step
        # (docs/performance.md, "Figures behind the code's comments").
        stream = pairs()
        while chunk := list(itertools.islice(stream, chunk_pairs)):
            yield _flatten_pairs(chunk)

    return tf.data.Dataset.from_generator(
        chunks, output_signature=_CHUNK_SPEC).flat_map(_unflatten_pairs)


def _flatten_pairs(chunk):
    segments_a, segments_b, labels = zip(*chunk)
    return (_concatenate(segments_a), [len(a) for a in segments_a],
            _concatenate(segments_b), [len(b) for b in segments_b],
            list(labels))


def _concatenate(segments):
    return np.fromiter(itertools.chain.from_iterable(segments), np.int32)


def _unflatten_pairs(flat_a, lengths_a, flat_b, lengths_b, labels):
    ends_a, ends_b = tf.cumsum(lengths_a), tf.cumsum(lengths_b)
    bounds = tf.stack([ends_a - lengths_a, ends_a, ends_b - lengths_b,
                       ends_b, labels], axis=1)
    return tf.data.Dataset.from_tensor_slices(bounds).map(
        lambda row: (flat_a[row[0]:row[1]], flat_b[row[2]:row[3]], row[4]))


def tokenize_documents(documents, tokenizer, chunk_sentences=8192):
    """Yields each document as a list of token-id lists, in order.

    Sentences of many documents go to the tokenizer in one call: each
    eager TF call costs milliseconds, so one call per document would make
    corpora of short documents (docstrings, web pages) tokenizer-bound.
    """
    chunk = []
    for document in documents:
        chunk.append(document)
        if sum(map(len, chunk)) >= chunk_sentences:
            yield from _tokenize_chunk(chunk, tokenizer)
            chunk = []
    if chunk:
        yield from _tokenize_chunk(chunk, tokenizer)


def _tokenize_chunk(documents, tokenizer):
    sentences = [sentence for document in documents for sentence in document]
    token_ids = tokenizer.tokenize(sentences)
    rows = np.split(token_ids.flat_values.numpy(),
                    np.cumsum(token_ids.row_lengths().numpy())[:-1])
    start = 0
    for document in documents:
        yield [row.tolist() for row in rows[start:start + len(document)]]
        start += len(document)


def contiguous_spans(document, max_num_tokens):
    """Greedily packs a document's sentences into spans of at most
    `max_num_tokens` tokens; a longer sentence is cut into pieces.

    >>> contiguous_spans([[1, 2], [3], [4, 5, 6, 7, 8]], 3)
    [[1, 2, 3], [4, 5, 6], [7, 8]]
    """
    spans, span = [], []
    for sentence in document:
        if span and len(span) + len(sentence) > max_num_tokens:
            spans.append(span)
            span = []
        span = span + list(sentence)
        while len(span) > max_num_tokens:
            spans.append(span[:max_num_tokens])
            span = span[max_num_tokens:]
    if span:
        spans.append(span)
    return spans


def batch_pairs(
    pairs,
    tokenizer,
    sequence_length,
    batch_size,
    next_sentence_prediction=True,
    mask_selection_rate=0.15,
    mask_selection_length=None,
    mask_token_rate=0.8,
    whole_word_masking=False,
    shuffle_buffer_size=10_000,
    skip_pairs=0,
    drop_remainder=True,
    seed=0,
):
    """Shuffles, batches, packs and masks pairs into training batches.

    Args:
        pairs: dataset of `(token_ids_a, token_ids_b, is_next)` (from
            `pair_dataset` or `read_pair_shards`).
        tokenizer: a `keras_bert.BertTokenizer` (special token ids and
            vocabulary for the masker).
        sequence_length: int.
        batch_size: int.
        next_sentence_prediction: bool. Pack A and B as two segments and
            return NSP labels; otherwise pack A alone.
        mask_selection_rate: float. Share of tokens to predict (0.15).
        mask_selection_length: int or None. Predictions per sequence;
            None: `ceil(mask_selection_rate * sequence_length)` (20 at 128).
        mask_token_rate: float. Share of the predictions shown as
            `[MASK]`; the rest is split evenly between a random token and
            the token itself (0.8: BERT's 80/10/10).
        whole_word_masking: bool.
        shuffle_buffer_size: int. 0 keeps the order.
        skip_pairs: int. Drop this many shuffled pairs first (resuming).
        drop_remainder: bool. Drop a last, smaller batch.
        seed: int. Seeds the shuffle and, with each batch's index in the
            stream, its masks.

    Returns:
        A dataset of `(x, y, sample_weight)`: `x` the model inputs
        (`token_ids`, `segment_ids`, `padding_mask`, `mask_positions`),
        `y` `{"mlm_logits": mask_ids, "nsp_logits": is_next}` and
        `sample_weight` `{"mlm_logits": mask_weights, "nsp_logits": 1}`.
    """
    preprocessor = BertMaskedLMPreprocessor(
        tokenizer,
        sequence_length=sequence_length,
        mask_selection_rate=mask_selection_rate,
        mask_selection_length=mask_selection_length,
        mask_token_rate=mask_token_rate,
        # Rounded so that 0.8 gives exactly BERT's 0.1.
        random_token_rate=round((1 - mask_token_rate) / 2, 6),
        whole_word_masking=whole_word_masking,
        next_sentence_prediction=next_sentence_prediction,
        seed=seed,
    )

    def pack_and_mask(index, pairs):
        token_ids_a, token_ids_b, is_next = pairs
        # The masks are a function of the seed and the batch's index in
        # the stream: the same however the map is parallelized, and again
        # when a resumed run replays the stream.
        batch_seed = tf.stack([tf.constant(seed, tf.int64), index])
        if next_sentence_prediction:
            return preprocessor((token_ids_a, token_ids_b), is_next,
                                seed=batch_seed)
        return preprocessor(token_ids_a, seed=batch_seed)

    if shuffle_buffer_size:
        # The same order from every iterator: Keras' `fit` draws a batch
        # from a first iterator to build a model that is not built yet and
        # then starts a second, so reshuffling would make a model's first
        # batches depend on whether it had trained before.
        pairs = pairs.shuffle(shuffle_buffer_size, seed=seed,
                              reshuffle_each_iteration=False)
    pairs = pairs.skip(skip_pairs)
    batches = pairs.ragged_batch(batch_size, drop_remainder=drop_remainder)
    batches = batches.enumerate(start=skip_pairs // batch_size)
    batches = batches.map(pack_and_mask, num_parallel_calls=tf.data.AUTOTUNE)
    return prefetch_for_fit(batches)
