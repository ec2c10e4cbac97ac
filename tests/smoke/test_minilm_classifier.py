"""A MiniLM classifier as a new user meets it, at the dependency floors:
from a preset, fit, evaluated and predicted on strings, quantized to int8,
exported to a SavedModel that a TensorFlow-only process serves.

Marked `floors`: `.ci/run` runs tests/smoke in an environment pinned to
constraints-floors.txt, under every backend; the full suite covers the
same paths at the newest versions.
"""

import os

import numpy as np
import pytest

import keras_bert
from tests.export import export_test_utils
from tests.smoke.minilm import MINILM_DIR
from tests.smoke.minilm import SEQUENCE_LENGTH
from tests.smoke.minilm import sentences
from tests.test_case import TestCase

pytestmark = pytest.mark.floors


class MiniLMClassifierTest(TestCase):
    def test_fit_predict_quantize_and_export(self):
        texts = sentences()
        labels = np.arange(len(texts)) % 2
        classifier = keras_bert.BertClassifier.from_preset(
            MINILM_DIR, num_classes=2, sequence_length=SEQUENCE_LENGTH)
        history = classifier.fit(texts, labels, batch_size=4, epochs=1,
                                 verbose=0)
        self.assertTrue(np.isfinite(history.history["loss"]).all())
        logits = classifier.predict(texts, verbose=0)
        self.assertEqual(logits.shape, (len(texts), 2))
        loss = classifier.evaluate(texts, labels, verbose=0,
                                   return_dict=True)["loss"]
        self.assertTrue(np.isfinite(loss))

        classifier.quantize("int8")
        quantized = classifier.predict(texts, verbose=0)
        self.assertAllClose(quantized, logits, atol=0.1)

        path = os.path.join(self.get_temp_dir(), "classifier")
        keras_bert.export_saved_model(classifier, path, verbose=False)
        served = export_test_utils.serve({"classifier": (
            path, "serving_default",
            {"text": export_test_utils.strings(texts)})})["classifier"]
        # TensorFlow rounds some int8 activations the other way.
        self.assertAllClose(served["logits"], quantized, atol=1e-2)
