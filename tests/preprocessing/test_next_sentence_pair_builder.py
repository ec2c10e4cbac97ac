import itertools
import os

import tensorflow as tf

from keras_bert.preprocessing import BertPacker
from keras_bert.preprocessing import BertTokenizer
from keras_bert.preprocessing import NextSentencePairBuilder
from tests.test_case import TestCase


def documents(num_documents=60, seed=0):
    """Documents whose tokens name their origin: `(doc, sentence, k)`."""
    import random

    rng = random.Random(seed)
    docs = []
    for d in range(num_documents):
        docs.append([[(d, s, k) for k in range(rng.randint(2, 9))]
                     for s in range(rng.randint(1, 12))])
    return docs


def sentences_of(tokens):
    """The ordered `(doc, sentence)` ids a segment is made of."""
    seen = []
    for doc, sentence, _ in tokens:
        if (doc, sentence) not in seen:
            seen.append((doc, sentence))
    return seen


class NextSentencePairBuilderTest(TestCase):
    def test_pairs_follow_the_original_recipe(self):
        docs = documents()
        builder = NextSentencePairBuilder(max_num_tokens=1000,
                                          short_seq_prob=0.0, seed=1)
        examples = list(builder.build(docs))
        covered = set()
        for tokens_a, tokens_b, is_next in examples:
            a, b = sentences_of(tokens_a), sentences_of(tokens_b)
            self.assertTrue(a and b)
            self.assertEqual(len({doc for doc, _ in a}), 1)
            self.assertIn(is_next, (0, 1))
            if is_next:
                # B is the continuation: the next sentence of the same doc.
                self.assertEqual(b[0], (a[-1][0], a[-1][1] + 1))
                covered.update(b)
            else:
                self.assertNotEqual(b[0][0], a[0][0])
            covered.update(a)
        # Unused sentences are put back, so every sentence gets used.
        self.assertEqual(covered, {(d, s) for d, doc in enumerate(docs)
                                   for s in range(len(doc))})

    def test_label_balance_and_lengths(self):
        builder = NextSentencePairBuilder(max_num_tokens=40, seed=2)
        for tokens_a, tokens_b, _ in builder.build(documents(100)):
            self.assertLessEqual(len(tokens_a) + len(tokens_b), 40)
            self.assertTrue(tokens_a and tokens_b)
        # B is random with probability 0.5, except that a chunk of a single
        # sentence is always NotNext (as in BERT's code). An A of two or more
        # sentences comes from a longer chunk, so there the split is 50/50.
        untruncated = NextSentencePairBuilder(max_num_tokens=1000, seed=2)
        labels = [is_next for a, _, is_next in untruncated.build(
            documents(1200)) if len(sentences_of(a)) > 1]
        self.assertGreater(len(labels), 800)  # std of the share < 1.8%
        self.assertAlmostEqual(sum(labels) / len(labels), 0.5, delta=0.06)
        never_random = NextSentencePairBuilder(max_num_tokens=40,
                                               random_next_prob=0.0, seed=2)
        for tokens_a, tokens_b, is_next in never_random.build(documents(100)):
            if not is_next:  # only a chunk of a single sentence
                self.assertEqual(len(sentences_of(tokens_a)), 1)

    def test_long_sentences_still_get_balanced_labels(self):
        # Every sentence is longer than max_num_tokens: the original closes
        # a chunk after one sentence and makes every label NotNext. (Long
        # documents: a document's lone last sentence is still NotNext.)
        docs = [[[(d, s, k) for k in range(12)] for s in range(40)]
                for d in range(30)]
        builder = NextSentencePairBuilder(max_num_tokens=10, seed=0)
        examples = list(builder.build(docs))
        labels = [is_next for _, _, is_next in examples]
        self.assertAlmostEqual(sum(labels) / len(labels), 0.5, delta=0.05)
        for tokens_a, tokens_b, is_next in examples:
            self.assertLessEqual(len(tokens_a) + len(tokens_b), 10)
            if is_next:
                a, b = sentences_of(tokens_a), sentences_of(tokens_b)
                self.assertEqual(b[0], (a[-1][0], a[-1][1] + 1))

    def test_examples_mix_the_documents_of_a_stream(self):
        # A stream read one book after another (documents in order) must
        # not give examples in that order: a shuffle buffer of pairs then
        # sees one book at a time, and NSP can key on the current book.
        docs = documents(60)
        builder = NextSentencePairBuilder(max_num_tokens=20, seed=0)
        firsts = [a[0][0] for a, _, _ in builder.build(docs)]
        self.assertEqual(set(firsts), set(range(60)))
        quarter = firsts[:len(firsts) // 4]
        self.assertGreater(max(quarter) - min(quarter), 40)
        # The same holds while the buffer streams (fewer slots than docs).
        small = NextSentencePairBuilder(max_num_tokens=20, seed=0,
                                        document_buffer_size=10)
        streamed = [a[0][0] for a, _, _ in small.build(docs)]
        self.assertEqual(set(streamed), set(range(60)))
        self.assertNotEqual(streamed, sorted(streamed))

    def test_short_sequences(self):
        def mean_length(short_seq_prob):
            builder = NextSentencePairBuilder(
                max_num_tokens=60, short_seq_prob=short_seq_prob, seed=3)
            examples = list(builder.build(documents(200)))
            return sum(len(a) + len(b) for a, b, _ in examples) / len(examples)

        self.assertLess(mean_length(1.0), 0.8 * mean_length(0.0))

    def test_seed_determinism(self):
        def run(seed):
            return list(NextSentencePairBuilder(max_num_tokens=30, seed=seed)
                        .build(documents(40)))

        self.assertEqual(run(5), run(5))
        self.assertNotEqual(run(5), run(6))

    def test_streams_from_an_endless_source(self):
        def endless():
            for d in itertools.count():
                yield [[(d, s, k) for k in range(4)] for s in range(3)]

        builder = NextSentencePairBuilder(max_num_tokens=10,
                                          document_buffer_size=5, seed=0)
        examples = list(itertools.islice(builder.build(endless()), 50))
        self.assertEqual(len(examples), 50)

    def test_needs_two_documents(self):
        builder = NextSentencePairBuilder(seed=0)
        with self.assertRaisesRegex(ValueError, "two non-empty documents"):
            list(builder.build([[["a", "b"]], [[]], []]))
        with self.assertRaisesRegex(ValueError, "max_num_tokens"):
            NextSentencePairBuilder(max_num_tokens=1)

    def test_text_files_to_tf_data(self):
        directory = self.get_temp_dir()
        path = os.path.join(directory, "corpus.txt")
        with open(path, "w") as f:
            for d in range(6):
                f.write("".join(f"the cat sat {d} {s} .\n" for s in range(4)))
                f.write("\n")
        vocabulary = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the",
                       "cat", "sat", "."] + [str(i) for i in range(6)])
        tokenizer = BertTokenizer(vocabulary)
        builder = NextSentencePairBuilder(max_num_tokens=13, seed=0)
        examples = list(builder.from_text_files(path, tokenizer))
        self.assertTrue(examples)
        packer = BertPacker.from_tokenizer(tokenizer, sequence_length=16)
        dataset = builder.as_dataset(path, tokenizer).ragged_batch(4)
        dataset = dataset.map(lambda a, b, y: (packer((a, b)), y))
        x, y = next(iter(dataset))
        self.assertEqual(x["token_ids"].shape, (4, 16))
        self.assertEqual(y.dtype, tf.int32)
        first_a, first_b, first_label = examples[0]
        self.assertEqual(x["token_ids"][0, 1:1 + len(first_a)].numpy()
                         .tolist(), first_a)
        self.assertEqual(int(y[0]), first_label)
