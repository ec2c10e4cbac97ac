"""A classifier saved under one backend loads under the others unchanged.

The running backend writes a `BertClassifier` with random weights (biases
and LayerNorms included) and its `BertPreprocessor` twice: as a `.keras`
file and as a `save_to_preset` directory. A subprocess per other backend
loads both (`keras.saving.load_model`, `BertClassifier.from_preset`),
packs real sentence pairs with the loaded preprocessor and runs the
loaded model: the ids must be equal and the logits equal to 1e-5. Run
once per backend (as CI does), this covers every ordered pair of
backends. `tests/models/test_bert_backbone.py` does the same for a bare
backbone's `.keras` file, `tests/checkpoints/test_presets_and_export.py`
for a backbone preset and same-backend round trips.
"""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from keras_bert.models.bert_classifier import BertClassifier
from keras_bert.preprocessing import BertPreprocessor
from tests.checkpoints.test_presets_and_export import randomized
from tests.export import export_test_utils as utils
from tests.test_case import to_numpy

BACKENDS = ("tensorflow", "jax", "torch")
SOURCE = keras.config.backend()
ATOL = 1e-5

# argv: the directory with "model.keras", "preset/" and "pairs.json";
# writes "<backend>.npz" there. Only `import keras_bert`: loading must find
# the lazily imported preprocessor classes by itself.
_LOAD_SCRIPT = """
import json, os, sys
import keras, numpy as np
import keras_bert

directory = sys.argv[1]
with open(os.path.join(directory, "pairs.json")) as f:
    pairs = tuple(json.load(f))

models = {
    "keras_file": keras.saving.load_model(
        os.path.join(directory, "model.keras")),
    "preset": keras_bert.BertClassifier.from_preset(
        os.path.join(directory, "preset")),
}
results = {}
for name, model in models.items():
    assert isinstance(model, keras_bert.BertClassifier), type(model)
    assert isinstance(model.preprocessor, keras_bert.BertPreprocessor), name
    packed = {k: np.asarray(v) for k, v in model.preprocessor(pairs).items()}
    results.update({f"{name}/{k}": v for k, v in packed.items()})
    results[f"{name}/logits"] = keras.ops.convert_to_numpy(model(packed))
np.savez(os.path.join(directory, keras.config.backend() + ".npz"), **results)
"""
OTHERS = [name for name in BACKENDS if name != SOURCE]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """The classifier, its packed inputs and logits, and where it is saved."""
    directory = str(tmp_path_factory.mktemp("portability"))
    keras.utils.set_random_seed(5)
    model = randomized(BertClassifier(
        utils.tiny_backbone(), num_classes=3, dropout=0.0,
        preprocessor=BertPreprocessor(utils.tokenizer(),
                                      utils.SEQUENCE_LENGTH)), seed=5)
    pairs = tuple(list(texts) for texts in utils.mrpc_pairs())
    model.save(os.path.join(directory, "model.keras"))
    model.save_to_preset(os.path.join(directory, "preset"))
    with open(os.path.join(directory, "pairs.json"), "w") as f:
        json.dump(pairs, f)
    packed = {k: np.asarray(to_numpy(v))
              for k, v in model.preprocessor(pairs).items()}
    return directory, packed, to_numpy(model(packed))


@pytest.fixture(scope="module")
def load_under(saved):
    """`load_under(backend)`: what the subprocess computed (run once)."""
    directory = saved[0]
    outputs = {}

    def load(target):
        if target not in outputs:
            env = dict(os.environ, KERAS_BACKEND=target,
                       TF_CPP_MIN_LOG_LEVEL="2")
            result = subprocess.run(
                [sys.executable, "-c", _LOAD_SCRIPT, directory], env=env,
                capture_output=True, text=True, timeout=300)
            assert result.returncode == 0, (
                f"loading under {target} failed:\n{result.stderr[-3000:]}")
            with np.load(os.path.join(directory, target + ".npz")) as f:
                outputs[target] = dict(f)
        return outputs[target]

    return load


@pytest.mark.slow
@pytest.mark.parametrize("target", OTHERS)
def test_classifier_saved_here_loads_under(saved, load_under, target):
    directory, packed, logits = saved
    with open(os.path.join(directory, "preset", "metadata.json")) as f:
        assert json.load(f)["saved_with_backend"] == SOURCE
    outputs = load_under(target)
    for artifact in ("keras_file", "preset"):
        for name, ids in packed.items():
            np.testing.assert_array_equal(
                outputs[f"{artifact}/{name}"], ids, f"{artifact}: {name}")
        np.testing.assert_allclose(
            outputs[f"{artifact}/logits"], logits, atol=ATOL, rtol=0,
            err_msg=f"{SOURCE} -> {target}, {artifact}")

