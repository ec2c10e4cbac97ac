"""`keras-bert pretrain --distribution`: a data-parallel run on 2 virtual
CPU devices writes a preset and checkpoints that load on one device.

The distributed run is a fresh process (JAX and TensorFlow fix their device
list when they start): JAX gets its devices from XLA_FLAGS, TensorFlow from
`use_virtual_cpu_devices(2)` run before the CLI. Each backend's test runs in
that backend's pass of tests/run.sh.
"""

import json
import os
import re
import subprocess
import sys
from unittest import mock

import keras
import numpy as np
import pytest

from keras_bert.checkpoints import save_to_preset
from keras_bert.models.bert_backbone import BertBackbone
from keras_bert.models.bert_pretrainer import BertPretrainer
from keras_bert.optimizers.bert_optimizer import create_optimizer
from keras_bert.training.pretraining.pretraining_checkpoint import PretrainingCheckpoint
from keras_bert.training.pretraining.pretraining_job import PretrainingJob
from tests.commands.test_pretrain_command import SMALL_MODEL
from tests.commands.test_pretrain_command import logged_steps
from tests.commands.cli_helpers import cli_error
from tests.commands.test_pretrain_command import run_cli
from tests.test_case import skip_unless_backend
from tests.training.toy_corpus import write_toy_corpus
from tests.training.toy_corpus import write_toy_vocabulary

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# TensorFlow has no environment variable for logical CPU devices.
TF_TWO_CPUS = (
    "import sys\n"
    "from keras_bert.training import distribution\n"
    "distribution.use_virtual_cpu_devices(2)\n"
    "from keras_bert import cli\n"
    "sys.exit(cli.main(sys.argv[1:]))\n"
)


def toy_inputs(directory):
    corpus = write_toy_corpus(directory, num_documents=40)
    vocabulary = write_toy_vocabulary(directory)
    # A 1-layer, width-16 starting preset: `--config DIR` keeps the
    # subprocess's compile time small.
    preset = os.path.join(directory, "small")
    save_to_preset(BertPretrainer(BertBackbone(
        vocabulary_size=31, max_sequence_length=24, **SMALL_MODEL)), preset)
    return corpus, vocabulary, preset


def pretrain_in_subprocess(backend, argv, timeout=300):
    env = {key: value for key, value in os.environ.items()
           if key not in ("XLA_FLAGS", "TF_CONFIG")
           and not key.startswith("KERAS_DISTRIBUTION_")}
    env.update(KERAS_BACKEND=backend, PYTHONPATH=REPO,
               CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="2")
    if backend == "jax":
        env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
        command = [sys.executable, "-m", "keras_bert.cli", *argv]
    else:
        command = [sys.executable, "-c", TF_TWO_CPUS, *argv]
    done = subprocess.run(command, env=env, cwd=REPO, capture_output=True,
                          text=True, timeout=timeout)
    if done.returncode:
        pytest.fail(f"pretrain exited with {done.returncode}:\n"
                    f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    return done.stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    "backend",
    [pytest.param(name, marks=skip_unless_backend(name))
     for name in ("jax", "tensorflow")],
)
def test_data_parallel_run_loads_on_one_device(tmp_path, backend):
    corpus, vocabulary, preset = toy_inputs(str(tmp_path))
    output = str(tmp_path / "run")
    printed = pretrain_in_subprocess(backend, [
        "pretrain", "--corpus", corpus, "--vocab", vocabulary,
        "--config", preset, "--steps", "2", "--batch-size", "4",
        "--sequence-length", "24", "--heldout-fraction", "0.1",
        "--log-every", "2", "--output", output,
        "--distribution", "data_parallel", "--nsp",  # as the preset has
    ])
    assert ("2 steps x 8 sequences (4 per replica x 2 replicas, "
            "data_parallel)") in printed, printed
    assert "masked-token accuracy" in printed
    with open(os.path.join(output, "run.json")) as file:
        settings = json.load(file)
    assert (settings["replicas"], settings["global_batch_size"]) == (2, 8)
    assert logged_steps(output) == [2]

    # This process has one device: the preset and the checkpoint load here.
    model = BertPretrainer.from_preset(os.path.join(output, "model"))
    # The optimizer as the run made it (its checkpoint holds the
    # schedule's lengths).
    model.compile(optimizer=create_optimizer(total_steps=2,
                                             learning_rate=1e-3,
                                             resizable_schedule=True))
    state = PretrainingCheckpoint.restore(model,
                                          os.path.join(output, "checkpoints"))
    assert state["step"] == 2
    # Two global batches were two optimizer steps, whatever the replicas.
    assert int(keras.ops.convert_to_numpy(model.optimizer.iterations)) == 2
    saved = BertPretrainer.from_preset(os.path.join(output, "model"))
    for a, b in zip(model.weights, saved.weights):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(a),
                                      keras.ops.convert_to_numpy(b))
    outputs = model.predict_on_batch({
        "token_ids": np.full((2, 24), 7, "int32"),
        "segment_ids": np.zeros((2, 24), "int32"),
        "padding_mask": np.ones((2, 24), "int32"),
        "mask_positions": np.zeros((2, 4), "int32"),
    })
    assert np.isfinite(outputs["mlm_logits"]).all()


# Backend-independent job logic: one pass is enough.
@pytest.mark.slow
@skip_unless_backend("jax")
def test_only_the_chief_writes_the_run_directory(tmp_path):
    corpus = write_toy_corpus(str(tmp_path), num_documents=40)
    vocabulary = write_toy_vocabulary(str(tmp_path))
    output = str(tmp_path / "run")
    job = PretrainingJob(output, corpus_files=[corpus], vocabulary=vocabulary,
                         config=SMALL_MODEL, steps=2, batch_size=4,
                         sequence_length=24, heldout_fraction=0.1,
                         print_fn=None)
    with mock.patch("keras_bert.training.distribution.is_chief",
                    return_value=False):
        job.prepare()
        job.train()
        job.evaluate(max_batches=1)
        job.save()
    assert not job.chief
    assert not os.path.exists(output)
    # Its scratch directory is gone too.
    assert not os.path.exists(job.output_dir)


@skip_unless_backend("torch")
def test_torch_says_it_has_no_engine(tmp_path):
    assert re.search("no distribution engine for the torch backend.*"
                     "KERAS_BACKEND=jax", cli_error(
                         "pretrain", "--distribution", "data_parallel",
                         "--output", str(tmp_path / "run")))
    assert not os.path.exists(tmp_path / "run")
