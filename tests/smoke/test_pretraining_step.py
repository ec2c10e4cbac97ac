"""Masked-LM pretraining steps of MiniLM on strings at the dependency
floors: the loss is finite, the weights move, and the run's loss curve is
drawn (marked `floors`, see tests/smoke/test_minilm_classifier.py)."""

import os

import keras
import numpy as np
import pytest

import keras_bert
from keras_bert.training.loss_curves import plot_loss_curves
from tests.smoke.minilm import MINILM_DIR
from tests.smoke.minilm import SEQUENCE_LENGTH
from tests.smoke.minilm import sentences
from tests.test_case import TestCase

pytestmark = pytest.mark.floors


class PretrainingStepTest(TestCase):
    def test_masked_lm_steps(self):
        pretrainer = keras_bert.BertPretrainer.from_preset(
            MINILM_DIR, next_sentence_prediction=False,
            sequence_length=SEQUENCE_LENGTH)
        dense = pretrainer.backbone.get_layer(
            "transformer_layer_0").output_dense
        before = keras.ops.convert_to_numpy(dense.kernel)
        # Two steps: the warmup's first has learning rate 0.
        history = pretrainer.fit(sentences(), batch_size=4, epochs=1,
                                 verbose=0)
        self.assertTrue(np.isfinite(history.history["loss"]).all())
        self.assertFalse(np.array_equal(
            keras.ops.convert_to_numpy(dense.kernel), before))
        path = os.path.join(self.get_temp_dir(), "loss.png")
        self.assertTrue(plot_loss_curves(
            [{"step": 1, "mlm_loss": history.history["loss"][-1]}], path))
        self.assertGreater(os.path.getsize(path), 0)
