import tensorflow as tf

from keras_bert.preprocessing import BertPreprocessor
from keras_bert.preprocessing import BertTokenizer
from keras_bert.preprocessing.tasks.task_dataset import preprocessed_dataset
from tests.test_case import TestCase

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
