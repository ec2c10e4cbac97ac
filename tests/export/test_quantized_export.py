"""SavedModels of an int8 and a bfloat16 classifier, served by a process
with TensorFlow and tensorflow-text only (every backend: under JAX and
PyTorch the export goes through the TensorFlow subprocess route).

The int8 model's signatures are XLA programs (`jit_compile="auto"`): the
test reads the `_XlaMustCompile` attribute from the saved graph, because
without it the int8 matmuls serve several times slower (docs/performance.md).
"""

import os
import shutil
import tempfile

import keras
import numpy as np
import pytest

import keras_bert
from keras_bert.preprocessing import BertPreprocessor
from tests.export import export_test_utils as utils
from tests.test_case import TestCase
from tests.test_case import to_numpy


def _classifier(dtype):
    keras.utils.set_random_seed(5)
    config = {**utils.tiny_backbone().get_config(), "dtype": dtype}
    return keras_bert.BertClassifier(
        keras_bert.BertBackbone.from_config(config), num_classes=3,
        dropout=0.0, preprocessor=BertPreprocessor(
            utils.tokenizer(), utils.SEQUENCE_LENGTH))


def _uses_xla(saved_model_dir):
    with open(os.path.join(saved_model_dir, "saved_model.pb"), "rb") as f:
        return b"_XlaMustCompile" in f.read()


# Its setUpClass builds, exports and serves: 20-60 s.
@pytest.mark.slow
class QuantizedExportTest(TestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.directory = tempfile.mkdtemp()
        cls.sentences = list(utils.sst2_sentences())
        cls.models = {"int8": _classifier("float32"),
                      "bfloat16": _classifier("bfloat16")}
        cls.models["int8"].quantize("int8")
        cls.paths = {}
        for name, model in cls.models.items():
            cls.paths[name] = os.path.join(cls.directory, name)
            keras_bert.export_saved_model(model, cls.paths[name],
                                          verbose=False)
        cls.results = utils.serve({
            name: (path, "serving_default",
                   {"text": utils.strings(cls.sentences)})
            for name, path in cls.paths.items()})

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.directory, ignore_errors=True)
        super().tearDownClass()

    def _expected_probabilities(self, name):
        logits = to_numpy(self.models[name].predict(self.sentences,
                                                    verbose=0))
        return to_numpy(keras.ops.softmax(np.asarray(logits, "float32")))

    def test_int8_serves_the_keras_model_outputs(self):
        served = self.results["int8"]["probabilities"]
        self.assertAllClose(served, self._expected_probabilities("int8"),
                            atol=1e-5, rtol=0)

    def test_bfloat16_serves_the_keras_model_outputs(self):
        served = self.results["bfloat16"]["probabilities"]
        self.assertEqual(served.dtype, np.float32)
        # bfloat16 keeps 8 bits of mantissa; backends round differently.
        self.assertAllClose(served, self._expected_probabilities("bfloat16"),
                            atol=1e-2, rtol=0)

    def test_only_the_quantized_model_is_compiled_with_xla(self):
        self.assertTrue(_uses_xla(self.paths["int8"]))
        self.assertFalse(_uses_xla(self.paths["bfloat16"]))
