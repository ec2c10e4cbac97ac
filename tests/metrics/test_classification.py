from keras_bert.metrics import classification_scores
from keras_bert.metrics import regression_scores
from tests.test_case import TestCase


class ClassificationScoresTest(TestCase):
    def test_accuracy_and_f1_by_hand(self):
        labels = [1, 1, 1, 0, 0, 1]
        predictions = [1, 0, 1, 1, 0, 1]
        scores = classification_scores(labels, predictions)
        # 4 of 6 right; TP = 3, predicted positive 4, actual positive 4.
        self.assertAlmostEqual(scores["accuracy"], 400 / 6)
        self.assertAlmostEqual(scores["f1"], 75.0)
        self.assertEqual(scores["count"], 6)

    def test_no_f1_for_more_than_two_classes(self):
        scores = classification_scores([0, 1, 2], [0, 2, 2])
        self.assertNotIn("f1", scores)
        self.assertAlmostEqual(scores["accuracy"], 200 / 3)

    def test_regression_correlations(self):
        scores = regression_scores([1, 2, 3, 4], [2, 1, 4, 3])
        # Centered products sum to 3, squares to 5 and 5: r = 3/5.
        self.assertAlmostEqual(scores["pearson"], 60.0)
        self.assertAlmostEqual(scores["spearman"], 60.0)
        self.assertAlmostEqual(scores["mse"], 1.0)
        # A monotone but non-linear prediction: Spearman 100, Pearson less.
        scores = regression_scores([1, 2, 3], [1, 2, 10])
        self.assertAlmostEqual(scores["spearman"], 100.0)
        self.assertLess(scores["pearson"], 99.0)

    def test_bad_input(self):
        with self.assertRaisesRegex(ValueError, "same length"):
            classification_scores([1, 0], [1])
        with self.assertRaisesRegex(ValueError, "no examples"):
            classification_scores([], [])
        with self.assertRaisesRegex(ValueError, "two or more"):
            regression_scores([1.0], [1.0])
