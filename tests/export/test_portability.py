"""Models saved under one backend load under the others unchanged.

The running backend writes a `BertClassifier` with random weights (biases
and LayerNorms included) and its `BertPreprocessor` twice: as a `.keras`
file and as a `save_to_preset` directory, and a bare `BertBackbone` as a
`.keras` file. A subprocess per other backend loads all three
(`keras.saving.load_model`, `BertClassifier.from_preset`), packs real
sentence pairs with the loaded preprocessor and runs the loaded models:
the ids must be equal and the outputs equal to 1e-5. Run once per backend
(as CI does), this covers every ordered pair of backends.
`tests/checkpoints/test_presets_and_export.py` covers a backbone preset
and same-backend round trips.
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

# argv: the directory with "model.keras", "preset/", "backbone.keras" and
# "pairs.json";
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
backbone = keras.saving.load_model(os.path.join(directory, "backbone.keras"))
assert isinstance(backbone, keras_bert.BertBackbone), type(backbone)
results["backbone/sequence_output"] = keras.ops.convert_to_numpy(
    backbone(packed)["sequence_output"])
np.savez(os.path.join(directory, keras.config.backend() + ".npz"), **results)
"""
OTHERS = [name for name in BACKENDS if name != SOURCE]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Where the models are saved, the packed inputs and their outputs."""
    directory = str(tmp_path_factory.mktemp("portability"))
    keras.utils.set_random_seed(5)
    model = randomized(BertClassifier(
        utils.tiny_backbone(), num_classes=3, dropout=0.0,
        preprocessor=BertPreprocessor(utils.tokenizer(),
                                      utils.SEQUENCE_LENGTH)), seed=5)
    pairs = tuple(list(texts) for texts in utils.mrpc_pairs())
    model.save(os.path.join(directory, "model.keras"))
    model.save_to_preset(os.path.join(directory, "preset"))
    backbone = randomized(utils.tiny_backbone(), seed=6)
    backbone.save(os.path.join(directory, "backbone.keras"))
    with open(os.path.join(directory, "pairs.json"), "w") as f:
        json.dump(pairs, f)
    packed = {k: np.asarray(to_numpy(v))
              for k, v in model.preprocessor(pairs).items()}
    return directory, packed, {
        "logits": to_numpy(model(packed)),
        "sequence_output": to_numpy(backbone(packed)["sequence_output"]),
    }


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
    directory, packed, expected = saved
    with open(os.path.join(directory, "preset", "metadata.json")) as f:
        assert json.load(f)["saved_with_backend"] == SOURCE
    outputs = load_under(target)
    for artifact in ("keras_file", "preset"):
        for name, ids in packed.items():
            np.testing.assert_array_equal(
                outputs[f"{artifact}/{name}"], ids, f"{artifact}: {name}")
        np.testing.assert_allclose(
            outputs[f"{artifact}/logits"], expected["logits"], atol=ATOL,
            rtol=0,
            err_msg=f"{SOURCE} -> {target}, {artifact}")


@pytest.mark.slow
@pytest.mark.parametrize("target", OTHERS)
def test_backbone_saved_here_loads_under(saved, load_under, target):
    np.testing.assert_allclose(
        load_under(target)["backbone/sequence_output"],
        saved[2]["sequence_output"], atol=ATOL, rtol=0,
        err_msg=f"{SOURCE} -> {target}, backbone.keras")
