import numpy as np
import tensorflow as tf

from keras_bert.preprocessing import BertPreprocessor
from keras_bert.preprocessing import BertTokenizer
from keras_bert.preprocessing.tasks.task_dataset import padding_buckets
from keras_bert.preprocessing.tasks.task_dataset import preprocessed_arrays
from keras_bert.preprocessing.tasks.task_dataset import preprocessed_dataset
from keras_bert.preprocessing.tasks.task_dataset import trim_padding
from tests.test_case import TestCase
from tests.test_case import to_numpy

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "cat",
              "sat", "dog", "ran"]


class PreprocessedDatasetTest(TestCase):
    def setUp(self):
        super().setUp()
        self.preprocessor = BertPreprocessor(BertTokenizer(VOCABULARY),
                                             sequence_length=6)

    def test_raw_strings_become_batches_of_model_inputs(self):
        dataset = preprocessed_dataset(
            self.preprocessor, ["a cat sat", "a dog", "dog ran"], [1, 0, 1],
            batch_size=2)
        batches = list(dataset)
        self.assertEqual([int(y.shape[0]) for _, y in batches], [2, 1])
        x, y = batches[0]
        self.assertEqual(x["token_ids"].numpy().tolist(),
                         [[2, 5, 6, 7, 3, 0], [2, 5, 8, 3, 0, 0]])
        self.assertEqual(y.numpy().tolist(), [1, 0])

    def test_autotuning_is_off_so_dropping_the_iterator_does_not_wait(self):
        # tf.data's tuning thread made `fit` return up to 38 s after its
        # last step (bench/fit_iterator_pause.py); both input paths of the
        # tasks must come without it.
        for x in (["a cat", "a dog"],
                  tf.data.Dataset.from_tensor_slices(["a cat"]).batch(1)):
            dataset = preprocessed_dataset(self.preprocessor, x)
            self.assertFalse(dataset.options().autotune.enabled)

    def test_empty_input_and_labels_beside_a_dataset_are_refused(self):
        with self.assertRaisesRegex(ValueError, "input `x` is empty"):
            preprocessed_dataset(self.preprocessor, [])
        dataset = tf.data.Dataset.from_tensor_slices(["a cat"]).batch(1)
        with self.assertRaisesRegex(ValueError, "inside the tf.data.Dataset"):
            preprocessed_dataset(self.preprocessor, dataset, y=[1])


def _batch(lengths, sequence_length, leading=()):
    """Packed inputs whose rows hold `lengths` real tokens (ids 1, 2, ...)."""
    mask = np.zeros(leading + (len(lengths), sequence_length), "int32")
    for row, length in enumerate(lengths):
        mask[..., row, :length] = 1
    ids = mask * np.arange(1, sequence_length + 1)
    return {"token_ids": ids, "segment_ids": mask, "padding_mask": mask}


class TrimPaddingTest(TestCase):
    def test_buckets_are_powers_of_two_then_the_length(self):
        self.assertEqual(padding_buckets(512), [16, 32, 64, 128, 256, 512])
        self.assertEqual(padding_buckets(100), [16, 32, 64, 100])
        self.assertEqual(padding_buckets(16), [16])

    def test_inputs_are_cut_to_the_bucket_of_the_longest_row(self):
        labels = np.array([1, 0, 1])
        for lengths, cut in (([5, 20, 3], 32), ([5, 16, 3], 16),
                             ([5, 70, 3], 128), ([0, 0, 0], 16)):
            x = _batch(lengths, 128)
            trimmed, y = trim_padding((x, labels), "inputs")
            for key in x:
                self.assertEqual(to_numpy(trimmed[key]).tolist(),
                                 x[key][:, :cut].tolist())
            self.assertEqual(to_numpy(y).tolist(), labels.tolist())
        self.assertIs(trim_padding((x, labels), None)[0], x)

    def test_a_mask_with_a_hole_keeps_its_last_real_token(self):
        x = _batch([3], 64)
        x["padding_mask"][0, 40] = 1
        self.assertEqual(trim_padding(x, "inputs")["token_ids"].shape, (1, 64))

    def test_choices_and_per_token_labels_are_cut_along_the_sequence(self):
        choices = _batch([4, 9], 64, leading=(3,))  # (3, 2, 64)
        self.assertEqual(
            trim_padding(choices, "inputs")["padding_mask"].shape, (3, 2, 16))
        x = _batch([4, 30], 64)
        tags = np.arange(128).reshape(2, 64)
        weights = x["padding_mask"].astype("float32")
        _, y, sample_weight = trim_padding((x, tags, weights),
                                           "inputs_and_labels")
        self.assertEqual(to_numpy(y).tolist(), tags[:, :32].tolist())
        self.assertEqual(to_numpy(sample_weight).tolist(),
                         weights[:, :32].tolist())

    def test_the_pipeline_and_the_arrays_cut_what_no_example_uses(self):
        preprocessor = BertPreprocessor(BertTokenizer(VOCABULARY),
                                        sequence_length=64)
        texts = ["a cat sat", "a dog", "dog ran a cat sat a dog ran " * 3]
        batches = list(preprocessed_dataset(preprocessor, texts, [1, 0, 1],
                                            batch_size=2, trim="inputs"))
        # The second batch's 23 tokens need 32 positions, the first's 16.
        self.assertEqual([int(x["token_ids"].shape[1]) for x, _ in batches],
                         [16, 32])
        full = preprocessed_arrays(preprocessor, texts, [1, 0, 1])
        trimmed = preprocessed_arrays(preprocessor, texts, [1, 0, 1],
                                      trim="inputs")
        self.assertEqual(trimmed[0]["token_ids"].tolist(),
                         full[0]["token_ids"][:, :32].tolist())
        self.assertFalse(full[0]["padding_mask"][:, 32:].any())
