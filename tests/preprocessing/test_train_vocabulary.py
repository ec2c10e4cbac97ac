import importlib
import os
from unittest import mock

import numpy as np
import tensorflow as tf
from tensorflow_text.tools.wordpiece_vocab import (
    wordpiece_tokenizer_learner_lib as learner,
)

from keras_bert.preprocessing import BertTokenizer
from keras_bert.preprocessing import train_vocabulary
from tests.test_case import TestCase
from tests.test_case import to_numpy

CORPUS = [
    "The cat sat on the mat.",
    "The dog sat on the log!",
    "Cats and dogs are sitting together, happily.",
    "A happy dog is a sitting dog.",
] * 25


class TrainVocabularyTest(TestCase):
    def test_learns_a_usable_vocabulary(self):
        path = os.path.join(self.get_temp_dir(), "vocab.txt")
        vocabulary = train_vocabulary(CORPUS, vocabulary_size=60,
                                      output_path=path)
        self.assertEqual(vocabulary[:5],
                         ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
        self.assertLessEqual(len(vocabulary), 60)
        self.assertEqual(len(set(vocabulary)), len(vocabulary))
        # Lowercased pieces only, frequent words kept whole.
        self.assertNotIn("The", vocabulary)
        self.assertIn("the", vocabulary)
        self.assertIn("##s", vocabulary)
        tokenizer = BertTokenizer(path)
        self.assertEqual(tokenizer.get_vocabulary(), vocabulary)
        token_ids = to_numpy(tokenizer(CORPUS[:4]))
        self.assertNotIn(tokenizer.unk_token_id, sum(token_ids, []))
        self.assertEqual(tokenizer.detokenize(tokenizer("The cat sat.")),
                         "the cat sat .")

    def test_files_datasets_and_lists_agree(self):
        path = os.path.join(self.get_temp_dir(), "corpus.txt")
        with open(path, "w") as f:
            f.write("\n".join(CORPUS) + "\n")
        from_list = train_vocabulary(CORPUS, vocabulary_size=50)
        self.assertEqual(train_vocabulary(path, vocabulary_size=50),
                         from_list)
        dataset = tf.data.Dataset.from_tensor_slices(CORPUS).batch(7)
        self.assertEqual(train_vocabulary(dataset, vocabulary_size=50,
                                          batch_size=16), from_list)
        generator = (line for line in CORPUS)
        self.assertEqual(train_vocabulary(generator, vocabulary_size=50),
                         from_list)

    def test_bounded_search_fills_the_vocabulary_in_fewer_passes(self):
        # Zipf-distributed words made of shared syllables, like real text:
        # the threshold lands in the low counts, far below the top word's.
        rng = np.random.default_rng(0)
        syllables = ["ka", "to", "ri", "ne", "mu", "sa", "lo", "pe", "di"]
        words = ["".join(rng.choice(syllables, size=rng.integers(1, 4)))
                 for _ in range(600)]
        probabilities = 1.0 / np.arange(1, 601)
        lines = [" ".join(rng.choice(words, size=12,
                                     p=probabilities / probabilities.sum()))
                 for _ in range(1500)]
        module = importlib.import_module(
            "keras_bert.preprocessing.train_vocabulary")
        for size in (60, 150):
            passes = mock.patch.object(learner, "learn_with_thresh",
                                       wraps=learner.learn_with_thresh)
            with passes as bounded_passes:
                bounded = train_vocabulary(lines, vocabulary_size=size)
            with passes as full_passes, mock.patch.object(
                    module, "_threshold_bounds", return_value=(1, 10**7)):
                full = train_vocabulary(lines, vocabulary_size=size)
            # Both searches stop at a threshold inside the learner's 5%
            # slack (not always the same one); the bounded one sooner.
            for vocabulary in (bounded, full):
                self.assertGreaterEqual(len(vocabulary), 0.95 * size)
                self.assertLessEqual(len(vocabulary), size)
            self.assertLess(bounded_passes.call_count,
                            full_passes.call_count)

    def test_cased_and_reserved_tokens(self):
        vocabulary = train_vocabulary(CORPUS, vocabulary_size=60,
                                      lowercase=False,
                                      reserved_tokens=["[unused0]"])
        self.assertEqual(vocabulary[5], "[unused0]")
        self.assertIn("The", vocabulary)

    def test_errors(self):
        with self.assertRaisesRegex(ValueError, "no room"):
            train_vocabulary(CORPUS, vocabulary_size=5)
        with self.assertRaisesRegex(ValueError, "single-character"):
            train_vocabulary(CORPUS, vocabulary_size=10)
        with self.assertRaisesRegex(FileNotFoundError, "nowhere.txt"):
            train_vocabulary("/tmp/nowhere.txt", vocabulary_size=50)
        with self.assertRaisesRegex(ValueError, "empty"):
            train_vocabulary(["", "  "], vocabulary_size=50)
