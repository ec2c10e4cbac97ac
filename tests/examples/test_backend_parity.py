"""examples/backend_parity.py gives the same numbers on every backend.

The docs promise one script that runs under KERAS_BACKEND=tensorflow, jax
and torch with the same results. This runs it as documented,

    python examples/backend_parity.py --all-backends --output OUT

which starts one subprocess per backend with KERAS_BACKEND set (the tiny
config: 2 layers, hidden 128, seeded NumPy weights and inputs; a batch of
2 x 16 tokens, one row half padding), and then checks here, not only
through the script's exit code: that each backend really ran, that the
outputs are not trivially equal (all zeros, every row the same), that
every element of `sequence_output` and `pooled_output` agrees across each
pair of backends to ATOL, and that `metrics.json` reports those
differences. About 35 s of CPU, nearly all of it three Keras imports.
"""

import itertools
import json
import os
import re

import keras
import numpy as np
import pytest

from tests.examples.test_examples import run_example

BACKENDS = ("tensorflow", "jax", "torch")
# float32 round-off through 2 layers of hidden 128 is about 1e-6 (1.2e-6
# measured on CPU); 1e-5 leaves room for other CPUs and kernels, and is ten
# times stricter than the 1e-4 at which the script itself exits with an
# error. The outputs are of order 1 (LayerNorm and tanh), so it is also
# a relative tolerance of about 1e-5.
ATOL = 1e-5
SHAPES = {"sequence_output": (2, 16, 128), "pooled_output": (2, 128)}


@pytest.mark.skipif(
    keras.config.backend() != "tensorflow",
    reason="the script starts every backend itself, so it runs once per "
    "test suite: under KERAS_BACKEND=tensorflow (Keras' default)")
def test_backend_parity_agrees_across_backends(tmp_path):
    out = str(tmp_path / "parity")

    stdout = run_example("backend_parity.py", [
        "--all-backends", "--config", "tiny", "--batch-size", "2",
        "--sequence-length", "16", "--output", out])

    # Each subprocess names the backend Keras actually loaded.
    checksums = dict(re.findall(
        r"^(\w+): pooled_output checksum ([\d.]+)$", stdout, re.M))
    assert sorted(checksums) == sorted(BACKENDS), stdout[-2000:]
    outputs = {}
    for backend in BACKENDS:
        with np.load(os.path.join(out, f"{backend}.npz")) as arrays:
            outputs[backend] = {key: arrays[key] for key in SHAPES}
        for key, shape in SHAPES.items():
            assert outputs[backend][key].shape == shape, (backend, key)
    # Agreement means something only if the outputs vary.
    pooled = outputs["tensorflow"]["pooled_output"]
    assert np.abs(pooled).mean() > 0.01
    assert np.abs(pooled[0] - pooled[1]).max() > 0.01

    measured = {}
    for a, b in itertools.combinations(sorted(BACKENDS), 2):
        for key in SHAPES:
            np.testing.assert_allclose(
                outputs[a][key], outputs[b][key], rtol=0, atol=ATOL,
                err_msg=f"{key}: {a} vs {b}")
        measured[f"{a}_vs_{b}"] = max(
            float(np.abs(outputs[a][key] - outputs[b][key]).max())
            for key in SHAPES)

    with open(os.path.join(out, "metrics.json")) as file:
        reported = json.load(file)["max_abs_difference"]
    assert reported == pytest.approx(measured, rel=1e-6, abs=1e-12)
