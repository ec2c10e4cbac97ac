"""A task's first `fit` traces its training step once on TensorFlow."""

from unittest import mock

import keras
import numpy as np
import tensorflow as tf

from keras_bert import BertBackbone
from keras_bert import BertClassifier
from tests.models.test_bert_backbone import TINY
from tests.test_case import TestCase
from tests.test_case import skip_unless_backend


def _dataset():
    rng = np.random.default_rng(0)
    inputs = {"token_ids": rng.integers(5, TINY["vocabulary_size"], (16, 8)),
              "segment_ids": np.zeros((16, 8), "int32"),
              "padding_mask": np.ones((16, 8), "int32")}
    return tf.data.Dataset.from_tensor_slices(
        (inputs, rng.integers(0, 2, 16))).batch(8)


class BuildBeforeTracingTest(TestCase):
    @skip_unless_backend("tensorflow")
    def test_first_fit_traces_the_train_step_once(self):
        model = BertClassifier(BertBackbone(**TINY), num_classes=2)
        traces = []
        train_step = model.train_step

        def counted(data):
            traces.append(1)
            return train_step(data)

        model.train_step = counted
        history = model.fit(_dataset(), epochs=2, verbose=0)
        # Keras alone traces it twice: Adam's moments and the metrics'
        # variables, created in the first trace, force a second.
        self.assertEqual(len(traces), 1)
        self.assertTrue(model.optimizer.built)
        self.assertEqual(int(model.optimizer.iterations), 4)
        self.assertTrue(np.all(np.isfinite(history.history["loss"])))

    # Elsewhere `build_before_tracing` returns at once: both runs would be
    # the same code.
    @skip_unless_backend("tensorflow")
    def test_training_matches_keras_own_build(self):
        # The same weights after two steps as a model left to Keras.
        def trained():
            keras.utils.set_random_seed(3)
            model = BertClassifier(BertBackbone(**TINY), num_classes=2,
                                   dropout=0.0)
            model.fit(_dataset(), epochs=1, verbose=0)
            return [keras.ops.convert_to_numpy(w) for w in model.weights]

        built_first = trained()
        with mock.patch("keras_bert.models.task_mixin.build_before_tracing"):
            left_to_keras = trained()
        for a, b in zip(built_first, left_to_keras):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
