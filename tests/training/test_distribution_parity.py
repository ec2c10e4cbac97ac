"""Distributed pretraining equals single-device pretraining, step by step.

Each test runs scenarios of this file in fresh Python processes: JAX and
TensorFlow fix their device list when they start, multi-worker runs need
several processes, and each scenario sets its own backend and devices. A
scenario writes `<name>.json` (per-step losses, variable layouts) into a
folder and the test compares. Each test runs once, in the test pass of the
backend whose engine it proves (tests/run.sh runs one pass per backend;
torch has no engine). By hand:

    PYTHONPATH=. python tests/training/test_distribution_parity.py mesh /tmp/out
"""

import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest

from tests.test_case import skip_unless_backend

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SEED = 7
STEPS = 3
GLOBAL_BATCH = 16
SEQUENCE_LENGTH = 16
NUM_MASKS = 3
MODEL = dict(
    vocabulary_size=64, num_layers=2, num_heads=2, hidden_dim=16,
    intermediate_dim=32, max_sequence_length=SEQUENCE_LENGTH, dropout=0.0,
)
RTOL = 1e-4


# Scenarios (run in a subprocess) -------------------------------------------


def pretraining_examples(first_step, steps, varied_mask_weights=True):
    """Global batches `first_step .. first_step + steps` of a fixed stream.

    Packed `[CLS] A [SEP] B [SEP]` pairs with padding, masked positions
    replaced by `[MASK]`, labels and mask weights (some masks are padding
    when `varied_mask_weights`), all from one seeded NumPy generator.
    """
    total = 2 * STEPS * GLOBAL_BATCH
    rng = np.random.default_rng(SEED)
    cls_id, sep_id, mask_id, first_word = 2, 3, 4, 5
    token_ids = np.zeros((total, SEQUENCE_LENGTH), "int32")
    segment_ids = np.zeros_like(token_ids)
    positions = np.zeros((total, NUM_MASKS), "int32")
    weights = np.zeros((total, NUM_MASKS), "float32")
    labels = np.zeros((total, NUM_MASKS), "int32")
    for i in range(total):
        len_a, len_b = rng.integers(2, 6, size=2)
        words = rng.integers(first_word, MODEL["vocabulary_size"], len_a + len_b)
        row = [cls_id, *words[:len_a], sep_id, *words[len_a:], sep_id]
        token_ids[i, : len(row)] = row
        segment_ids[i, len_a + 2 : len(row)] = 1
        candidates = [p for p, t in enumerate(row) if t >= first_word]
        count = rng.integers(1, NUM_MASKS + 1) if varied_mask_weights else 3
        chosen = np.sort(rng.choice(candidates, count, replace=False))
        positions[i, :count] = chosen
        weights[i, :count] = 1.0
        labels[i, :count] = token_ids[i, chosen]
        token_ids[i, chosen] = mask_id
    x = {
        "token_ids": token_ids,
        "segment_ids": segment_ids,
        "padding_mask": (token_ids > 0).astype("int32"),
        "mask_positions": positions,
    }
    y = {"mlm_logits": labels, "nsp_logits": rng.integers(0, 2, total)}
    sample_weight = {
        "mlm_logits": weights, "nsp_logits": np.ones(total, "float32")
    }
    window = slice(first_step * GLOBAL_BATCH, (first_step + steps) * GLOBAL_BATCH)
    return tuple(
        {key: value[window] for key, value in part.items()}
        for part in (x, y, sample_weight)
    )


def build_pretrainer():
    import keras

    import keras_bert

    model = keras_bert.BertPretrainer(keras_bert.BertBackbone(**MODEL))
    schedule = keras.optimizers.schedules.PolynomialDecay(
        3e-3, decay_steps=2 * STEPS, end_learning_rate=1e-4
    )
    model.compile(
        optimizer=keras.optimizers.AdamW(schedule, weight_decay=0.01),
        loss={
            # BERT's MLM loss: mean over real masked positions only.
            "mlm_logits": keras.losses.SparseCategoricalCrossentropy(
                from_logits=True, reduction="mean_with_sample_weight"
            ),
            "nsp_logits": keras.losses.SparseCategoricalCrossentropy(
                from_logits=True
            ),
        },
    )
    return model


def train(model, engine, first_step, steps, varied_mask_weights=True):
    """Fits `steps` global batches; returns the loss of each step."""
    import tensorflow as tf

    from keras_bert.training import distribution

    examples = tf.data.Dataset.from_tensor_slices(
        pretraining_examples(first_step, steps, varied_mask_weights)
    )
    replicas = distribution.num_replicas(engine)
    dataset = distribution.distribute_dataset(
        examples, engine, per_replica_batch_size=GLOBAL_BATCH // replicas
    )
    # One step per epoch: each epoch's logged loss is exactly that step's.
    history = model.fit(dataset, epochs=steps, steps_per_epoch=1, verbose=0)
    return [float(loss) for loss in history.history["loss"]]


def load_checkpoint(model, path):
    """Loads weights and optimizer state (moments, step) from `path`.

    A `.weights.h5` written after training holds both; the optimizer must
    be built first to receive its part.
    """
    model.optimizer.build(model.trainable_variables)
    model.load_weights(path)
    return model


def jax_layouts(model):
    return {
        variable.path: {
            "spec": [axis for axis in variable.value.sharding.spec],
            "devices": len(variable.value.sharding.device_set),
            "shard_shape": list(variable.value.addressable_shards[0].data.shape),
        }
        for variable in model.weights + model.optimizer.variables
    }


def tf_layouts(model):
    layouts = {}
    for variable in model.weights:
        values = getattr(variable.value, "values", (variable.value,))
        layouts[variable.path] = sorted(value.device for value in values)
    return layouts


def scenario_mesh(out_dir):
    """JAX, 8 virtual devices: data parallel and a 2x4 mesh vs one device."""
    from keras_bert.training import distribution

    distribution.use_virtual_cpu_devices(8)
    import keras

    init = os.path.join(out_dir, "init.weights.h5")
    halfway = os.path.join(out_dir, "single_halfway.weights.h5")
    result = {}
    keras.utils.set_random_seed(SEED)
    model = build_pretrainer()
    model.save_weights(init)
    result["single"] = train(model, None, 0, STEPS)
    model.save_weights(halfway)
    result["single"] += train(model, None, STEPS, STEPS)

    engine = distribution.configure_distribution("data_parallel")
    with distribution.distribution_scope(engine):
        model = build_pretrainer()
        model.load_weights(init)
        result["data_parallel"] = train(model, engine, 0, STEPS)
        result["data_parallel_layouts"] = jax_layouts(model)

    engine = distribution.configure_distribution("model_parallel", (2, 4))
    sharded = os.path.join(out_dir, "model_parallel_halfway.weights.h5")
    with distribution.distribution_scope(engine):
        model = build_pretrainer()
        model.load_weights(init)
        result["model_parallel"] = train(model, engine, 0, STEPS)
        result["model_parallel_layouts"] = jax_layouts(model)
        model.save_weights(sharded)
        # A single-device checkpoint resumed on the mesh.
        model = load_checkpoint(build_pretrainer(), halfway)
        result["single_to_mesh"] = train(model, engine, STEPS, STEPS)
        result["single_to_mesh_layouts"] = jax_layouts(model)
    # The mesh's checkpoint resumed on one device.
    model = load_checkpoint(build_pretrainer(), sharded)
    result["mesh_to_single"] = train(model, None, STEPS, STEPS)
    result["global_batch"] = distribution.global_batch_size(
        GLOBAL_BATCH // 2, engine
    )
    return result


def scenario_mirrored(out_dir):
    """TensorFlow, 2 logical CPUs: MirroredStrategy vs one device."""
    from keras_bert.training import distribution

    distribution.use_virtual_cpu_devices(2)
    import keras

    # tf.distribute averages per-replica means, so with MLM mask weights
    # the replicas must hold equal weight sums for an exact match (see
    # docs/distributed.md); every example has three real masks here.
    def run(model, engine, first_step):
        return train(model, engine, first_step, STEPS, False)

    init = os.path.join(out_dir, "init.weights.h5")
    halfway = os.path.join(out_dir, "single_halfway.weights.h5")
    mirrored = os.path.join(out_dir, "mirrored_halfway.weights.h5")
    result = {}
    keras.utils.set_random_seed(SEED)
    model = build_pretrainer()
    model.save_weights(init)
    result["single"] = run(model, None, 0)
    model.save_weights(halfway)
    result["single"] += run(model, None, STEPS)

    engine = distribution.configure_distribution("data_parallel")
    result["strategy"] = type(engine).__name__
    with distribution.distribution_scope(engine):
        model = build_pretrainer()
        model.load_weights(init)
        result["mirrored"] = run(model, engine, 0)
        result["mirrored_layouts"] = tf_layouts(model)
        result["iterations"] = int(model.optimizer.iterations.numpy())
        model.save_weights(mirrored)
        model = load_checkpoint(build_pretrainer(), halfway)
        result["single_to_mirrored"] = run(model, engine, STEPS)
        result["single_to_mirrored_layouts"] = tf_layouts(model)
    model = load_checkpoint(build_pretrainer(), mirrored)
    result["mirrored_to_single"] = run(model, None, STEPS)
    return result


def scenario_worker(out_dir):
    """One worker of a multi-process run (or the one-process reference).

    The cluster comes from the environment the test sets: TF_CONFIG for
    TensorFlow, KERAS_DISTRIBUTION_* for JAX (2 CPU devices per process).
    """
    from keras_bert.training import distribution

    clustered = "TF_CONFIG" in os.environ or (
        "KERAS_DISTRIBUTION_NUM_PROCESSES" in os.environ
    )
    if clustered and os.environ["KERAS_BACKEND"] == "jax":
        distribution.use_virtual_cpu_devices(2)
    import keras

    init = os.path.join(out_dir, "init.weights.h5")
    engine = None
    if clustered:
        engine = distribution.configure_distribution("data_parallel")
    with distribution.distribution_scope(engine):
        keras.utils.set_random_seed(SEED)
        model = build_pretrainer()
        if clustered:
            model.load_weights(init)
        else:
            model.save_weights(init)
        losses = train(model, engine, 0, STEPS, varied_mask_weights=False)
    return {
        "losses": losses,
        "replicas": distribution.num_replicas(engine),
        "chief": distribution.is_chief(engine),
        "engine": type(engine).__name__,
    }


SCENARIOS = {
    "mesh": scenario_mesh,
    "mirrored": scenario_mirrored,
    "worker": scenario_worker,
}


# Tests ----------------------------------------------------------------------


def start(scenario, backend, out_dir, name=None, env=None):
    environment = {
        key: value for key, value in os.environ.items()
        if key not in ("XLA_FLAGS", "TF_CONFIG")
        and not key.startswith("KERAS_DISTRIBUTION_")
    }
    environment.update(
        KERAS_BACKEND=backend,
        PYTHONPATH=REPO,
        CUDA_VISIBLE_DEVICES="",
        TF_CPP_MIN_LOG_LEVEL="2",
        **(env or {}),
    )
    name = name or scenario
    with open(os.path.join(out_dir, f"{name}.log"), "w") as log:
        return subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), scenario, out_dir, name],
            env=environment, stdout=log, stderr=subprocess.STDOUT, cwd=REPO,
        )


def finish(process, out_dir, name, timeout=300):
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    if process.returncode != 0:
        with open(os.path.join(out_dir, f"{name}.log")) as log:
            tail = log.read()[-4000:]
        pytest.fail(f"scenario {name} exited with {process.returncode}:\n{tail}")
    with open(os.path.join(out_dir, f"{name}.json")) as file:
        return json.load(file)


def run(scenario, backend, out_dir, name=None, env=None):
    name = name or scenario
    return finish(start(scenario, backend, out_dir, name, env), out_dir, name)


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for sock in sockets:
        sock.bind(("127.0.0.1", 0))
    ports = [sock.getsockname()[1] for sock in sockets]
    for sock in sockets:
        sock.close()
    return ports


def assert_losses_equal(actual, expected, what):
    np.testing.assert_allclose(
        actual, expected, rtol=RTOL, atol=0, err_msg=f"{what} losses"
    )


@pytest.mark.slow
@skip_unless_backend("jax")
def test_jax_data_and_model_parallel_match_one_device(tmp_path):
    result = run("mesh", "jax", str(tmp_path))
    single = result["single"]
    # Different steps see different batches and learning rates.
    assert len(set(np.round(single, 4))) == 2 * STEPS
    assert_losses_equal(result["data_parallel"], single[:STEPS], "data parallel")
    assert_losses_equal(result["model_parallel"], single[:STEPS], "2x4 mesh")
    assert_losses_equal(result["single_to_mesh"], single[STEPS:], "resumed")
    assert_losses_equal(result["mesh_to_single"], single[STEPS:], "resumed")
    assert result["global_batch"] == GLOBAL_BATCH

    qkv = "transformer_layer_0/attention/query_key_value/kernel"
    layouts = result["data_parallel_layouts"]
    assert layouts[qkv] == {
        "spec": [None, None, None], "devices": 8, "shard_shape": [16, 3, 16]
    }
    for key in ("model_parallel_layouts", "single_to_mesh_layouts"):
        layouts = result[key]
        expected = {
            qkv: ([None, None, "model"], [16, 3, 4]),
            "transformer_layer_1/attention/output_dense/kernel":
                (["model", None], [4, 16]),
            "transformer_layer_1/intermediate_dense/kernel":
                ([None, "model"], [16, 8]),
            "transformer_layer_1/intermediate_dense/bias": (["model"], [8]),
            "transformer_layer_1/output_dense/kernel": (["model", None], [8, 16]),
            "embeddings/token_embedding/embeddings": ([None, "model"], [64, 4]),
            "transformer_layer_1/output_layer_norm/gamma": ([None], [16]),
            "nsp_head/kernel": ([None, None], [16, 2]),
        }
        for path, (spec, shard_shape) in expected.items():
            assert layouts[path] == {
                "spec": spec, "devices": 8, "shard_shape": shard_shape
            }, (key, path)
        # Adam's moments follow their weights' layout.
        moments = [p for p in layouts if "intermediate_dense_kernel_" in p]
        assert moments and all(
            layouts[p]["shard_shape"] == [16, 8] for p in moments
        )


@pytest.mark.slow
@skip_unless_backend("tensorflow")
def test_tensorflow_mirrored_matches_one_device(tmp_path):
    result = run("mirrored", "tensorflow", str(tmp_path))
    single = result["single"]
    assert result["strategy"] == "MirroredStrategy"
    assert_losses_equal(result["mirrored"], single[:STEPS], "mirrored")
    assert_losses_equal(result["single_to_mirrored"], single[STEPS:], "resumed")
    assert_losses_equal(result["mirrored_to_single"], single[STEPS:], "resumed")
    # Learning-rate schedules count global steps, not replica steps.
    assert result["iterations"] == STEPS
    two_cpus = ["/job:localhost/replica:0/task:0/device:CPU:0",
                "/job:localhost/replica:0/task:0/device:CPU:1"]
    for key in ("mirrored_layouts", "single_to_mirrored_layouts"):
        assert set(map(tuple, result[key].values())) == {tuple(two_cpus)}


@pytest.mark.slow
@pytest.mark.parametrize(
    "backend",
    [
        pytest.param(name, marks=skip_unless_backend(name))
        for name in ("tensorflow", "jax")
    ],
)
def test_two_processes_match_one_process(tmp_path, backend):
    out_dir = str(tmp_path)
    reference = run("worker", backend, out_dir, "reference")
    if backend == "tensorflow":
        workers = [f"127.0.0.1:{port}" for port in free_ports(2)]
        envs = [
            {"TF_CONFIG": json.dumps({
                "cluster": {"worker": workers},
                "task": {"type": "worker", "index": index},
            })}
            for index in range(2)
        ]
    else:
        address = f"127.0.0.1:{free_ports(1)[0]}"
        envs = [
            {"KERAS_DISTRIBUTION_JOB_ADDRESSES": address,
             "KERAS_DISTRIBUTION_NUM_PROCESSES": "2",
             "KERAS_DISTRIBUTION_PROCESS_ID": str(index)}
            for index in range(2)
        ]
    processes = [
        start("worker", backend, out_dir, f"worker{index}", env)
        for index, env in enumerate(envs)
    ]
    results = [
        finish(process, out_dir, f"worker{index}")
        for index, process in enumerate(processes)
    ]
    assert reference["replicas"] == 1
    for index, result in enumerate(results):
        assert_losses_equal(result["losses"], reference["losses"], "worker")
        assert result["replicas"] == (2 if backend == "tensorflow" else 4)
        assert result["chief"] == (index == 0)


if __name__ == "__main__":
    scenario, out_dir = sys.argv[1:3]
    name = sys.argv[3] if len(sys.argv) > 3 else scenario
    os.makedirs(out_dir, exist_ok=True)
    outcome = SCENARIOS[scenario](out_dir)
    with open(os.path.join(out_dir, f"{name}.json"), "w") as file:
        json.dump(outcome, file, indent=1)
