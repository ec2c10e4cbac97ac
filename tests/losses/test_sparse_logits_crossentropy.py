import keras
import numpy as np
import pytest

from keras_bert.losses.sparse_logits_crossentropy import (
    SparseLogitsCrossentropy,
)
from tests.test_case import TestCase
from tests.test_case import to_numpy


def reference(labels, logits):
    """-log softmax(logits)[label] per position, in float64 NumPy."""
    logits = logits.astype("float64")
    peak = logits.max(-1, keepdims=True)
    log_z = peak[..., 0] + np.log(np.exp(logits - peak).sum(-1))
    return log_z - np.take_along_axis(logits, labels[..., None], -1)[..., 0]


class SparseLogitsCrossentropyTest(TestCase):
    def setUp(self):
        super().setUp()
        rng = np.random.default_rng(0)
        # Vocabulary-sized rows, logits large enough that a naive
        # exp overflows float32.
        self.logits = (rng.normal(size=(3, 4, 1000)) * 40).astype("float32")
        self.labels = rng.integers(0, 1000, size=(3, 4))
        self.weights = rng.integers(0, 2, size=(3, 4)).astype("float32")

    def test_per_position_values_match_numpy(self):
        loss = SparseLogitsCrossentropy(reduction=None)
        values = to_numpy(loss(self.labels, self.logits))
        self.assertEqual(values.shape, (3, 4))
        self.assertAllClose(values, reference(self.labels, self.logits),
                            atol=1e-3, rtol=1e-5)
        self.assertAllFinite(values)

    def test_reductions_match_keras_sparse_crossentropy(self):
        for reduction in ("sum_over_batch_size", "mean_with_sample_weight",
                          "sum"):
            ours = SparseLogitsCrossentropy(reduction=reduction)
            keras_loss = keras.losses.SparseCategoricalCrossentropy(
                from_logits=True, reduction=reduction)
            for weights in (None, self.weights):
                self.assertAllClose(
                    float(to_numpy(ours(self.labels, self.logits, weights))),
                    float(to_numpy(keras_loss(self.labels, self.logits,
                                              weights))),
                    atol=1e-3, rtol=1e-5, msg=(reduction, weights is None))

    def test_labels_with_a_trailing_axis_of_one(self):
        loss = SparseLogitsCrossentropy(reduction=None)
        self.assertAllClose(to_numpy(loss(self.labels[..., None],
                                          self.logits)),
                            to_numpy(loss(self.labels, self.logits)))

    def test_a_training_step_moves_weights_as_keras_loss_does(self):
        # The gradient, on whatever backend runs: one SGD step of the same
        # model under each loss lands on the same weights.
        features = np.random.default_rng(1).normal(
            size=(8, 5, 6)).astype("float32")
        labels = np.random.default_rng(2).integers(0, 300, size=(8, 5))
        weights = []
        for loss in (SparseLogitsCrossentropy(),
                     keras.losses.SparseCategoricalCrossentropy(
                         from_logits=True)):
            keras.utils.set_random_seed(0)
            model = keras.Sequential([keras.Input((5, 6)),
                                      keras.layers.Dense(300)])
            before = to_numpy(model.layers[0].kernel)
            model.compile(optimizer=keras.optimizers.SGD(1.0), loss=loss)
            model.train_on_batch(features, labels)
            weights.append(to_numpy(model.layers[0].kernel))
        self.assertGreater(np.abs(weights[0] - before).max(), 1e-3)
        self.assertAllClose(weights[0], weights[1], atol=1e-5, rtol=1e-4)

    def test_half_precision_logits_are_scored_in_float32(self):
        loss = SparseLogitsCrossentropy(reduction=None)
        half = keras.ops.cast(self.logits / 40, "bfloat16")
        values = loss(self.labels, half)
        self.assertEqual(keras.backend.standardize_dtype(values.dtype),
                         "float32")
        self.assertAllClose(
            to_numpy(values),
            reference(self.labels, to_numpy(keras.ops.cast(half,
                                                           "float32"))),
            atol=1e-4, rtol=1e-5)

    def test_label_shape_that_does_not_match_is_refused(self):
        with pytest.raises(ValueError,
                           match=r"labels \(3, 5\).*\(3, 4, 1000\)"):
            SparseLogitsCrossentropy()(np.zeros((3, 5), "int32"),
                                       self.logits)

    def test_serialization(self):
        loss = SparseLogitsCrossentropy(reduction="mean_with_sample_weight",
                                        name="mlm")
        revived = keras.losses.deserialize(keras.losses.serialize(loss))
        self.assertIsInstance(revived, SparseLogitsCrossentropy)
        self.assertEqual((revived.name, revived.reduction),
                         ("mlm", "mean_with_sample_weight"))
