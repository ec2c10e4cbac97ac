"""all-MiniLM-L6-v2 as a sentence embedder at the dependency floors: unit
vectors that put a paraphrase nearer than an unrelated sentence (marked
`floors`, see tests/smoke/test_minilm_classifier.py)."""

import numpy as np
import pytest

import keras_bert
from tests.smoke.minilm import MINILM_DIR
from tests.test_case import TestCase

pytestmark = pytest.mark.floors


class MiniLMEmbedderTest(TestCase):
    def test_paraphrase_is_nearest(self):
        embedder = keras_bert.BertTextEmbedder.from_preset(MINILM_DIR)
        vectors = np.asarray(embedder.predict(
            ["a cat sat on the mat", "the cat was sitting on a rug",
             "interest rates rose again this quarter"], verbose=0),
            "float64")
        self.assertAllClose(np.linalg.norm(vectors, axis=-1), 1.0, atol=1e-5)
        similar, unrelated = vectors[0] @ vectors[1], vectors[0] @ vectors[2]
        self.assertGreater(similar, unrelated + 0.3)
