import json
import os

from keras_bert.preprocessing import BertTokenizer
from keras_bert.training.pretraining.pair_shards import read_pair_shards
from keras_bert.training.pretraining.pair_shards import write_corpus_shards
from keras_bert.training.pretraining.pair_shards import write_pair_shards
from keras_bert.training.pretraining.pretraining_data import pair_dataset
from keras_bert.training.pretraining.text_corpus import TextCorpus
from tests.test_case import TestCase
from tests.training.toy_corpus import toy_vocabulary
from tests.training.toy_corpus import write_toy_corpus

LENGTH = 24


def as_lists(dataset, count=None):
    if count is not None:
        dataset = dataset.take(count)
    return [(a.tolist(), b.tolist(), int(y))
            for a, b, y in dataset.as_numpy_iterator()]


class PairShardsTest(TestCase):
    def setUp(self):
        super().setUp()
        self.tokenizer = BertTokenizer(toy_vocabulary())
        self.corpus = TextCorpus([write_toy_corpus(self.get_temp_dir(),
                                                   num_documents=30)])
        self.directory = os.path.join(self.get_temp_dir(), "shards")

    def stream(self, seed=0, **kwargs):
        return pair_dataset(self.corpus, self.tokenizer, LENGTH, seed=seed,
                            repeat=False, **kwargs)

    def test_round_trip_equals_the_streamed_pairs(self):
        streamed = as_lists(self.stream())
        manifest = write_pair_shards(self.stream(), self.directory,
                                     self.tokenizer, LENGTH,
                                     pairs_per_shard=7)
        self.assertEqual(manifest["num_pairs"], len(streamed))
        self.assertEqual(len(manifest["shards"]), -(-len(streamed) // 7))
        self.assertEqual([s["pairs"] for s in manifest["shards"]][:-1],
                         [7] * (len(manifest["shards"]) - 1))
        self.assertEqual(as_lists(read_pair_shards(self.directory)), streamed)
        # The vocabulary the ids refer to travels with them.
        self.assertEqual(
            BertTokenizer.from_preset(self.directory).get_vocabulary(),
            self.tokenizer.get_vocabulary())
        names = sorted(os.listdir(self.directory))
        self.assertIn("pairs-00000-of-%05d.tfrecord" % len(manifest["shards"]),
                      names)
        self.assertFalse([n for n in names if n.endswith(".partial")])

    def test_shuffled_passes_are_seeded_and_cover_every_pair(self):
        streamed = as_lists(self.stream())
        write_pair_shards(self.stream(), self.directory, self.tokenizer,
                          LENGTH, pairs_per_shard=5)
        count = len(streamed)

        def passes(seed):
            pairs = as_lists(read_pair_shards(self.directory, repeat=True,
                                              shuffle_seed=seed), 3 * count)
            return [pairs[i * count:(i + 1) * count] for i in range(3)]

        first = passes(1)
        self.assertEqual(first, passes(1))
        for one_pass in first:
            self.assertEqual(sorted(one_pass), sorted(streamed))
        # File order changes from pass to pass and with the seed.
        self.assertNotEqual(first[0], first[1])
        self.assertNotEqual(first, passes(2))

    def test_corpus_passes_draw_new_pairs(self):
        manifest = write_corpus_shards(
            self.corpus, self.tokenizer, self.directory, LENGTH, passes=2,
            seed=4, metadata={"corpus_files": self.corpus.paths})
        expected = as_lists(self.stream(seed=4)) + as_lists(self.stream(seed=5))
        self.assertEqual(as_lists(read_pair_shards(self.directory)), expected)
        self.assertNotEqual(expected[:len(expected) // 2],
                            expected[len(expected) // 2:])
        with open(os.path.join(self.directory, "shards.json")) as file:
            stored = json.load(file)
        self.assertEqual(stored, manifest)
        self.assertEqual(stored["metadata"]["passes"], 2)
        self.assertEqual(stored["metadata"]["corpus_files"], self.corpus.paths)

    def test_settings_and_vocabulary_are_checked(self):
        write_pair_shards(self.stream(), self.directory, self.tokenizer, LENGTH)
        with self.assertRaisesRegex(ValueError, "sequence_length=24 but this "
                                    "run uses 128"):
            read_pair_shards(self.directory, sequence_length=128)
        with self.assertRaisesRegex(ValueError, "next_sentence_prediction"):
            read_pair_shards(self.directory, next_sentence_prediction=False)
        bigger = BertTokenizer(toy_vocabulary() + ["extra"])
        with self.assertRaisesRegex(ValueError, "31 tokens there, 32 in this"):
            read_pair_shards(self.directory, tokenizer=bigger)
        swapped = toy_vocabulary()
        swapped[10], swapped[11] = swapped[11], swapped[10]
        with self.assertRaisesRegex(ValueError, "id 10 is 'w3' there"):
            read_pair_shards(self.directory, tokenizer=BertTokenizer(swapped))
        read_pair_shards(self.directory, sequence_length=LENGTH,
                         next_sentence_prediction=True,
                         tokenizer=self.tokenizer)

    def test_interrupted_write_leaves_no_shards(self):
        def failing_pairs():
            yield [5, 6], [7], 1
            raise KeyboardInterrupt

        with self.assertRaises(KeyboardInterrupt):
            write_pair_shards(failing_pairs(), self.directory, self.tokenizer,
                              LENGTH)
        self.assertFalse(os.path.exists(self.directory))
        self.assertEqual(os.listdir(os.path.dirname(self.directory)), [])
        with self.assertRaisesRegex(FileNotFoundError, "no shards.json"):
            read_pair_shards(self.directory)

    def test_existing_directories_are_protected(self):
        write_pair_shards(self.stream(), self.directory, self.tokenizer, LENGTH)
        with self.assertRaisesRegex(FileExistsError, "overwrite=True"):
            write_pair_shards(self.stream(), self.directory, self.tokenizer,
                              LENGTH)
        manifest = write_pair_shards([([5], [6], 0)], self.directory,
                                     self.tokenizer, LENGTH, overwrite=True)
        self.assertEqual(manifest["num_pairs"], 1)
        other = os.path.join(self.get_temp_dir(), "notes")
        os.makedirs(other)
        open(os.path.join(other, "keep.txt"), "w").close()
        with self.assertRaisesRegex(FileExistsError, "not a pair-shard"):
            write_pair_shards([([5], [6], 0)], other, self.tokenizer, LENGTH,
                              overwrite=True)
        self.assertTrue(os.path.exists(os.path.join(other, "keep.txt")))

    def test_no_pairs_is_an_error(self):
        with self.assertRaisesRegex(ValueError, "No sentence pairs"):
            write_pair_shards([], self.directory, self.tokenizer, LENGTH)
        self.assertFalse(os.path.exists(self.directory))
