"""A training step under ModelParallel communicates as Megatron-LM does.

Megatron-LM (Shoeybi et al., 2019) splits each transformer block over the
model axis as two pairs of matmuls: the QKV projection column-parallel with
whole heads on each device (attention then needs nothing from the other
devices), the attention output row-parallel; the feed-forward input
column-parallel, its output row-parallel. One training step then costs per
block, and nothing more:

* over the model axis, 4 all-reduces: forward, one after each row-parallel
  matmul (its partial sums); backward, one on the input gradient of each
  column-parallel matmul;
* over the data axis, one all-reduce of each of the block's 12 weight
  gradients: QKV kernel and bias, attention output kernel and bias, FFN
  input kernel and bias, FFN output kernel and bias, and the gamma and
  beta of both LayerNorms;
* no all-gather, reduce-scatter, all-to-all or collective-permute.

XLA merges independent all-reduces (its all-reduce combiner puts every
gradient into one), so the test counts both all-reduce instructions and
the tensors they reduce: per block exactly 4 + 12 = 16 reduced tensors in
4 to 16 instructions, and 0 of every other collective. "Per block" is the
count for a 2-block model minus the count for a 1-block model, both
compiled for a (2 data, 4 model) mesh of 8 virtual CPU devices: the
embeddings, the pooler, the head and the optimizer are the same in both.
The program counted is the optimized HLO of the `train_step` that
`model.fit` compiles, dumped by XLA (`--xla_dump_to`).

A control with 2 heads on 4 model devices (half a head per device) must
need more: the counter sees a layout that is not head-aligned.

It runs in a fresh process (JAX fixes its devices when it starts), under
JAX only: `keras.distribution.ModelParallel` exists only there. By hand:

    PYTHONPATH=. KERAS_BACKEND=jax python \\
        tests/training/test_distribution_collectives.py /tmp/out

(it sets `XLA_FLAGS=--xla_force_host_platform_device_count=8` and the
dump folder itself).
"""

import collections
import glob
import json
import os
import re
import subprocess
import sys

import keras
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MESH = (2, 4)
MODEL = dict(vocabulary_size=64, num_heads=4, hidden_dim=32,
             intermediate_dim=64, max_sequence_length=16, dropout=0.1)
KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all",
         "collective-permute")
# Megatron-LM, per block and training step (see the module docstring).
MODEL_AXIS_ALL_REDUCES = 2 + 2
WEIGHTS_PER_BLOCK = 12
MEGATRON_PER_BLOCK = {
    "all-reduce tensors": MODEL_AXIS_ALL_REDUCES + WEIGHTS_PER_BLOCK,
    "all-gather": 0, "reduce-scatter": 0, "all-to-all": 0,
    "collective-permute": 0,
}

# `%name = TYPE kind(` or `kind-start(`; the matching `-done` is not
# counted again.
_INSTRUCTION = re.compile(
    r"=\s*(?P<type>.*?)\s(?P<kind>" + "|".join(KINDS) + r")(?:-start)?\("
)
_ARRAY = re.compile(r"\b[a-z][a-z0-9]*\[[0-9,]*\]")


def count_collectives(hlo_text):
    """Collective instructions by kind, plus the tensors all-reduced."""
    counts = collections.Counter({kind: 0 for kind in KINDS})
    counts["all-reduce tensors"] = 0
    for match in _INSTRUCTION.finditer(hlo_text):
        counts[match["kind"]] += 1
        if match["kind"] == "all-reduce":
            counts["all-reduce tensors"] += len(_ARRAY.findall(match["type"]))
    return dict(counts)


# Scenario (run in a subprocess) --------------------------------------------


def train_step_collectives(dump_dir, num_layers, num_heads):
    """Fits one step on the mesh; counts the collectives of its program."""
    import numpy as np

    import keras_bert
    from keras_bert.training import distribution

    before = set(glob.glob(os.path.join(dump_dir, "*after_optimizations.txt")))
    engine = distribution.configure_distribution("model_parallel", MESH)
    with distribution.distribution_scope(engine):
        backbone = keras_bert.BertBackbone(
            **{**MODEL, "num_heads": num_heads}, num_layers=num_layers
        )
        model = keras_bert.BertClassifier(backbone, num_classes=2)
        model.compile(
            optimizer=keras.optimizers.AdamW(1e-3),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        )
        batch, length = 8, MODEL["max_sequence_length"]
        rng = np.random.default_rng(0)
        x = {
            "token_ids": rng.integers(1, 64, (batch, length), "int32"),
            "segment_ids": np.zeros((batch, length), "int32"),
            "padding_mask": np.ones((batch, length), "int32"),
        }
        model.fit(x, rng.integers(0, 2, batch), batch_size=batch, verbose=0)
    (dump,) = set(
        glob.glob(os.path.join(dump_dir, "*after_optimizations.txt"))
    ) - before
    with open(dump) as file:
        return count_collectives(file.read())


def scenario(out_dir):
    dump_dir = os.path.join(out_dir, "hlo")
    # Read when JAX starts its CPU backend, which no code has done yet.
    os.environ["XLA_FLAGS"] = (
        "--xla_force_host_platform_device_count=8 "
        f"--xla_dump_to={dump_dir} --xla_dump_hlo_module_re=.*train_step.*"
    )
    return {
        f"heads{heads}_layers{layers}": train_step_collectives(
            dump_dir, layers, heads
        )
        for heads in (MODEL["num_heads"], 2)
        for layers in (1, 2)
    }


# Test -----------------------------------------------------------------------


def per_block(counts, heads):
    two, one = counts[f"heads{heads}_layers2"], counts[f"heads{heads}_layers1"]
    return {kind: two[kind] - one[kind] for kind in two}


@pytest.mark.slow
@pytest.mark.skipif(
    keras.config.backend() != "jax",
    reason="counts the XLA program of keras.distribution.ModelParallel, "
    "which only the JAX backend has (runs in the jax pass)",
)
def test_model_parallel_step_needs_megatron_collectives_per_block(tmp_path):
    out_dir = str(tmp_path)
    environment = {
        key: value for key, value in os.environ.items()
        if key != "XLA_FLAGS" and not key.startswith("KERAS_DISTRIBUTION_")
    }
    environment.update(
        KERAS_BACKEND="jax", PYTHONPATH=REPO, CUDA_VISIBLE_DEVICES=""
    )
    process = subprocess.run(
        [sys.executable, os.path.abspath(__file__), out_dir],
        env=environment, cwd=REPO, capture_output=True, text=True,
        timeout=600,
    )
    assert process.returncode == 0, process.stdout[-2000:] + process.stderr[-4000:]
    with open(os.path.join(out_dir, "collectives.json")) as file:
        counts = json.load(file)

    block = per_block(counts, MODEL["num_heads"])
    message = f"per block {block}, Megatron-LM {MEGATRON_PER_BLOCK}"
    assert {kind: block[kind] for kind in MEGATRON_PER_BLOCK} == (
        MEGATRON_PER_BLOCK
    ), message
    assert MODEL_AXIS_ALL_REDUCES <= block["all-reduce"] <= (
        block["all-reduce tensors"]
    ), message
    # Half a head per device: attention itself must communicate.
    split_heads = per_block(counts, 2)
    assert sum(split_heads[kind] for kind in KINDS) > sum(
        block[kind] for kind in KINDS
    ), split_heads


if __name__ == "__main__":
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    result = scenario(out_dir)
    with open(os.path.join(out_dir, "collectives.json"), "w") as file:
        json.dump(result, file, indent=1)
    print(json.dumps(result, indent=1))
