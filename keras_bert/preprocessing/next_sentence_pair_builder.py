import random

from keras_bert.preprocessing.tensorflow_modules import tf
from keras_bert.preprocessing.text_documents import read_documents

IS_NEXT = 1
NOT_NEXT = 0


class NextSentencePairBuilder:
    """Builds next-sentence-prediction examples as BERT's pretraining data.

    Follows `create_instances_from_document` of the original
    `create_pretraining_data.py`. For each document, sentences are gathered
    into a chunk until it reaches a target length (`max_num_tokens`, or with
    probability `short_seq_prob` a random length in `[2, max_num_tokens]`).
    A random number of the chunk's first sentences becomes segment A. With
    probability `random_next_prob` segment B is a random span of a different
    document, label `NOT_NEXT` (0), and the chunk's unused sentences are put
    back for the next example; otherwise B is the rest of the chunk, label
    `IS_NEXT` (1). The pair is then trimmed to `max_num_tokens`, one token at
    a time from the longer segment, at its front or back at random.

    One change to the original: a chunk takes a second sentence even when
    its first already reaches the target. The original closes a chunk of
    one long sentence and always gives it a random B; at short lengths (64
    tokens) on books with long sentences that made 60% of the labels
    NotNext, and "A is long" a shortcut for the label. Only a document's
    last sentence can still form a chunk of its own (then NotNext).

    Streaming: documents are read lazily and kept in a buffer of
    `document_buffer_size`; random B segments come from the buffer (the
    original loads the whole corpus). The document whose examples come next
    is drawn at random from the buffer, so a stream that reads one book
    (or one file of related documents) after another still gives examples
    whose A segments mix many documents; the original shuffles all its
    examples at the end. Each document's examples come out together:
    shuffle them downstream too (`tf.data.Dataset.shuffle`). The same
    `seed` and documents give the same examples.

    Args:
        max_num_tokens: int. Maximum tokens of A plus B (the sequence length
            minus 3 for [CLS] and two [SEP]), at least 2.
        short_seq_prob: float. Probability of a shorter target length.
        random_next_prob: float. Probability that B is a random segment.
        document_buffer_size: int. Documents held for random B segments.
        seed: int or None.

    Example:

    >>> builder = keras_bert.NextSentencePairBuilder(max_num_tokens=8, seed=0)
    >>> docs = [[["a", "b"], ["c", "d"], ["e"]], [["x", "y"], ["z"]]]
    >>> [label for _, _, label in builder.build(docs)]  # doctest: +SKIP
    [1, 0, 1]
    """

    def __init__(
        self,
        max_num_tokens=509,
        short_seq_prob=0.1,
        random_next_prob=0.5,
        document_buffer_size=1000,
        seed=None,
    ):
        if max_num_tokens < 2:
            raise ValueError(
                "`max_num_tokens` must be >= 2 (one token per segment); got "
                f"{max_num_tokens}."
            )
        if document_buffer_size < 2:
            raise ValueError(
                "`document_buffer_size` must be >= 2 so B can come from "
                f"another document; got {document_buffer_size}."
            )
        self.max_num_tokens = max_num_tokens
        self.short_seq_prob = short_seq_prob
        self.random_next_prob = random_next_prob
        self.document_buffer_size = document_buffer_size
        self.seed = seed

    def build(self, documents):
        """Yields `(tokens_a, tokens_b, is_next)` examples.

        Args:
            documents: an iterable of documents; a document is a list of
                sentences; a sentence is a list of tokens (ids or strings).
        """
        rng = random.Random(self.seed)
        buffer = []
        for document in documents:
            document = [list(sentence) for sentence in document if sentence]
            if not document:
                continue
            buffer.append(document)
            if len(buffer) > self.document_buffer_size:
                index = rng.randrange(len(buffer))
                yield from self._examples(buffer, index, rng)
                # Swap-remove: O(1), and the order is random anyway.
                buffer[index] = buffer[-1]
                buffer.pop()
        if len(buffer) < 2:
            raise ValueError(
                "Next-sentence pairs need at least two non-empty documents "
                f"(random B segments come from another one); got {len(buffer)}."
            )
        # The rest stay in the buffer, so each keeps every other document
        # as a source of random B segments.
        for index in rng.sample(range(len(buffer)), len(buffer)):
            yield from self._examples(buffer, index, rng)

    def _examples(self, buffer, index, rng):
        document = buffer[index]
        target = self.max_num_tokens
        if rng.random() < self.short_seq_prob:
            target = rng.randint(2, self.max_num_tokens)
        chunk, chunk_length, i = [], 0, 0
        while i < len(document):
            chunk.append(document[i])
            chunk_length += len(document[i])
            if i == len(document) - 1 or (
                    chunk_length >= target and len(chunk) > 1):
                a_end = rng.randint(1, len(chunk) - 1) if len(chunk) > 1 else 1
                tokens_a = [t for sentence in chunk[:a_end] for t in sentence]
                if len(chunk) == 1 or rng.random() < self.random_next_prob:
                    is_next = NOT_NEXT
                    tokens_b = self._random_span(
                        buffer, index, target - len(tokens_a), rng
                    )
                    i -= len(chunk) - a_end  # put unused sentences back
                else:
                    is_next = IS_NEXT
                    tokens_b = [t for sentence in chunk[a_end:] for t in sentence]
                self._truncate(tokens_a, tokens_b, rng)
                yield tokens_a, tokens_b, is_next
                chunk, chunk_length = [], 0
            i += 1

    @staticmethod
    def _random_span(buffer, index, target_length, rng):
        other = rng.randrange(len(buffer) - 1)
        document = buffer[other if other < index else other + 1]
        tokens = []
        for sentence in document[rng.randrange(len(document)):]:
            tokens.extend(sentence)
            if len(tokens) >= target_length:
                break
        return tokens

    def _truncate(self, tokens_a, tokens_b, rng):
        while len(tokens_a) + len(tokens_b) > self.max_num_tokens:
            longer = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
            # Trimming either end avoids always cutting sentence endings.
            del longer[0 if rng.random() < 0.5 else -1]

    def from_text_files(self, paths, tokenizer, mode="sentence_per_line"):
        """Yields `(token_ids_a, token_ids_b, is_next)` from text files.

        Args:
            paths: a path or list of paths, read by
                `keras_bert.preprocessing.read_documents(paths, mode)`.
            tokenizer: a `keras_bert.BertTokenizer` (each document's
                sentences are tokenized in one batch).
            mode: "sentence_per_line" or "paragraphs".
        """
        def tokenized():
            for document in read_documents(paths, mode):
                yield tokenizer.tokenize(document).to_list()

        return self.build(tokenized())

    def as_dataset(self, paths, tokenizer, mode="sentence_per_line"):
        """`from_text_files` as a `tf.data.Dataset` of int32 tensors.

        Elements are `(token_ids_a [None], token_ids_b [None], is_next [])`;
        pack them with `ds.ragged_batch(n).map(lambda a, b, y:
        (packer((a, b)), y))`.
        """
        spec = tf.TensorSpec([None], tf.int32)
        return tf.data.Dataset.from_generator(
            lambda: self.from_text_files(paths, tokenizer, mode),
            output_signature=(spec, spec, tf.TensorSpec([], tf.int32)),
        )
