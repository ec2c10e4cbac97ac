"""A BERT preset that keras-hub saves loads into keras_bert with the same
outputs, at the dependency floors (marked `floors`, see
tests/smoke/test_minilm_classifier.py)."""

import os

import keras
import numpy as np
import pytest

import keras_bert
from tests.test_case import TestCase
from tests.test_case import to_numpy

pytestmark = pytest.mark.floors


class KerasHubPresetTest(TestCase):
    def test_backbone_preset_loads_with_the_same_outputs(self):
        import keras_hub

        keras.utils.set_random_seed(3)
        hub = keras_hub.models.BertBackbone(
            vocabulary_size=30, num_layers=2, num_heads=2, hidden_dim=16,
            intermediate_dim=32, max_sequence_length=16)
        directory = os.path.join(self.get_temp_dir(), "hub")
        hub.save_to_preset(directory)
        ours = keras_bert.BertBackbone.from_preset(directory)
        inputs = {"token_ids": np.array([[2, 7, 9, 3, 0]], "int32"),
                  "segment_ids": np.zeros((1, 5), "int32"),
                  "padding_mask": np.array([[1, 1, 1, 1, 0]], "int32")}
        self.assertAllClose(to_numpy(ours(inputs)["sequence_output"]),
                            to_numpy(hub(inputs)["sequence_output"]),
                            atol=1e-5)
