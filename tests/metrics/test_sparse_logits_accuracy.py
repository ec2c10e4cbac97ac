import keras
import numpy as np

from keras_bert.metrics.sparse_logits_accuracy import SparseLogitsAccuracy
from tests.test_case import TestCase
from tests.test_case import to_numpy


class SparseLogitsAccuracyTest(TestCase):
    def test_matches_keras_argmax_accuracy_without_ties(self):
        rng = np.random.default_rng(0)
        logits = rng.normal(size=(6, 10, 500)).astype("float32")
        labels = rng.integers(0, 500, size=(6, 10))
        # Make about half of the labels the top logit.
        hits = rng.random((6, 10)) < 0.5
        rows, cols = np.nonzero(hits)
        logits[rows, cols, labels[rows, cols]] = 10.0
        weights = rng.integers(0, 2, size=(6, 10)).astype("float32")
        for sample_weight in (None, weights):
            ours = SparseLogitsAccuracy()
            reference = keras.metrics.SparseCategoricalAccuracy()
            ours.update_state(labels, logits, sample_weight)
            reference.update_state(labels, logits, sample_weight)
            self.assertAllClose(float(to_numpy(ours.result())),
                                float(to_numpy(reference.result())))
        expected = (np.argmax(logits, -1) == labels)[weights > 0].mean()
        self.assertAllClose(float(to_numpy(ours.result())), expected)
        self.assertGreater(expected, 0.3)

    def test_a_tie_for_the_top_is_a_miss(self):
        metric = SparseLogitsAccuracy()
        logits = np.array([[1.0, 5.0, 5.0, 0.0],    # label 1 ties label 2
                           [7.0, 7.0, 7.0, 7.0],    # every logit equal
                           [np.inf] * 4,
                           [0.0, 0.0, 0.0, 3.0]], "float32")  # a hit
        metric.update_state(np.array([1, 0, 0, 3]), logits)
        self.assertEqual(float(to_numpy(metric.result())), 0.25)

    def test_trailing_label_axis_and_result_after_reset(self):
        metric = SparseLogitsAccuracy(name="mlm_accuracy")
        logits = np.array([[[0.0, 2.0, 1.0], [3.0, 0.0, 1.0]]], "float32")
        metric.update_state(np.array([[[1], [2]]]), logits)
        self.assertEqual(float(to_numpy(metric.result())), 0.5)
        metric.reset_state()
        metric.update_state(np.array([[1, 0]]), logits)
        self.assertEqual(float(to_numpy(metric.result())), 1.0)

    def test_serialization(self):
        metric = SparseLogitsAccuracy(name="mlm_logits_accuracy")
        revived = keras.metrics.deserialize(keras.metrics.serialize(metric))
        self.assertIsInstance(revived, SparseLogitsAccuracy)
        self.assertEqual(revived.name, "mlm_logits_accuracy")
