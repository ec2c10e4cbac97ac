"""`BertInitializer` and `deferred_initialization`: the loaders build a
model without drawing the weights a checkpoint overwrites, and draw what
it lacks."""

import os

import keras
import numpy as np

import keras_bert
from keras_bert.layers.bert_initializer import BertInitializer
from keras_bert.layers.bert_initializer import deferred_initialization
from tests.checkpoints.reference_checkpoints import make_huggingface
from tests.test_case import TestCase
from tests.test_case import to_numpy


class BertInitializerTest(TestCase):
    def test_draws_a_truncated_normal_outside_the_context(self):
        values = to_numpy(BertInitializer(0.02)((256, 64)))
        self.assertLessEqual(np.abs(values).max(), 0.04 + 1e-7)
        self.assertAlmostEqual(float(values.std()), 0.0176, delta=0.002)

    def test_zeros_without_drawing_inside_the_context(self):
        with deferred_initialization():
            values = BertInitializer(0.02)((3, 5), dtype="bfloat16")
            # Other initializers in the process are untouched.
            other = keras.initializers.TruncatedNormal(stddev=0.02)((3, 5))
        self.assertEqual(np.asarray(values, "float32").tolist(),
                         np.zeros((3, 5)).tolist())
        self.assertGreater(np.abs(to_numpy(other)).max(), 0)

    def test_config_round_trip(self):
        initializer = BertInitializer(0.05, seed=3)
        again = keras.initializers.deserialize(
            keras.initializers.serialize(initializer))
        self.assertIsInstance(again, BertInitializer)
        self.assertEqual((again.stddev, again.seed), (0.05, 3))


class DeferredLoadTest(TestCase):
    def test_what_the_checkpoint_lacks_is_drawn(self):
        # A masked LM has no pooler, and no classifier head.
        directory = os.path.join(self.get_temp_dir(), "masked_lm")
        make_huggingface("BertForMaskedLM", directory)
        classifier = keras_bert.BertClassifier.from_preset(
            directory, num_classes=2, preprocessor=None)
        for name, layer in (("pooler", classifier.backbone.pooler),
                            ("head", classifier.classifier_head)):
            kernel = to_numpy(layer.kernel)
            self.assertGreater(np.abs(kernel).max(), 0, name)
            self.assertLess(np.abs(kernel).max(),
                            2.01 * classifier.backbone.initializer_range,
                            name)
        # The encoder holds the checkpoint's weights, not zeros.
        self.assertGreater(np.abs(to_numpy(
            classifier.backbone.token_embedding.embeddings)).max(), 0.1)
