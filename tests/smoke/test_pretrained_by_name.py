"""Pretrained models by name at the dependency floors (huggingface_hub
and kagglehub at their oldest allowed releases): a classifier from a
Hugging Face id in a Hub-layout cache, a download from a loopback Hub,
and a keras-hub preset from kagglehub's cache (marked `floors`, see
tests/smoke/test_minilm_classifier.py)."""

import json
import os
import subprocess
import sys
from unittest import mock

import pytest

import keras_bert
from tests.checkpoints.hub_fixtures import FakeHub
from tests.checkpoints.hub_fixtures import add_to_cache
from tests.checkpoints.hub_fixtures import add_to_kaggle_cache
from tests.smoke.minilm import MINILM_DIR
from tests.smoke.minilm import sentences
from tests.test_case import TestCase

pytestmark = pytest.mark.floors
MINILM = "sentence-transformers/all-MiniLM-L6-v2"
_RESOLVE = """
import json, sys
from keras_bert.checkpoints import resolve_preset
for name in sys.argv[1:]:
    try:
        print(json.dumps({"path": resolve_preset(name)}))
    except Exception as error:
        print(json.dumps({"error": str(error)}))
"""


class PretrainedByNameTest(TestCase):
    def test_classifier_from_a_cached_hugging_face_id(self):
        from huggingface_hub import constants

        cache = os.path.join(self.get_temp_dir(), "hub")
        add_to_cache(cache, MINILM, MINILM_DIR)
        with mock.patch.object(constants, "HF_HUB_CACHE", cache):
            classifier = keras_bert.BertClassifier.from_preset(
                MINILM, num_classes=2, label_names=["neg", "pos"])
        self.assertTrue(set(classifier.predict_labels(
            sentences(4), verbose=0)) <= {"neg", "pos"})

    def test_download_from_a_hub_and_its_errors(self):
        cache = os.path.join(self.get_temp_dir(), "downloads")
        with FakeHub() as hub:
            hub.add(MINILM, MINILM_DIR)
            result = subprocess.run(
                [sys.executable, "-c", _RESOLVE, MINILM, "org/missing"],
                capture_output=True, text=True, timeout=300,
                env={**os.environ, "HF_ENDPOINT": hub.url,
                     "HF_HUB_OFFLINE": "0", "HF_HUB_CACHE": cache,
                     "HF_HUB_DISABLE_PROGRESS_BARS": "1"})
        self.assertEqual(result.returncode, 0, result.stderr[-2000:])
        found, missing = map(json.loads, result.stdout.splitlines())
        self.assertTrue(os.path.isfile(
            os.path.join(found["path"], "model.safetensors")))
        self.assertIn("does not exist on the Hub", missing["error"])

    def test_keras_hub_preset_name_from_kagglehubs_cache(self):
        import keras_hub

        from keras_bert.checkpoints.kaggle_download import keras_hub_handle

        directory = os.path.join(self.get_temp_dir(), "preset")
        keras_hub.models.BertBackbone(
            vocabulary_size=30, num_layers=1, num_heads=2, hidden_dim=16,
            intermediate_dim=32, max_sequence_length=16,
        ).save_to_preset(directory)
        handle = keras_hub_handle("bert_tiny_en_uncased")
        cache = os.path.join(self.get_temp_dir(), "kagglehub")
        add_to_kaggle_cache(cache, handle[len("kaggle://"):], directory)
        with mock.patch.dict(os.environ, {"KAGGLEHUB_CACHE": cache}):
            backbone = keras_bert.BertBackbone.from_preset(
                "bert_tiny_en_uncased")
        self.assertEqual(backbone.hidden_dim, 16)
