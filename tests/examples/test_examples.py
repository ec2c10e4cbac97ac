"""Every script in examples/ runs end to end, so none breaks silently.

Each example runs as a user would run it: a subprocess of this Python,
under this KERAS_BACKEND, from the project root, writing to a temporary
folder. The data is a slice of the real datasets in `../shared/data` (see
its README); the model is `--config tiny` (2 layers, hidden 128) with
random weights and the all-MiniLM-L6-v2 WordPiece vocabulary, trained for
one epoch on 32 examples. The checkpoint converter reads tiny checkpoints
written here. Each example runs in one backend's test pass (its `backend`
below; `tests.test_case.script_runs_under`), the three passes sharing
them. Checked: the exit code, the files the script promises
(metrics, curves PNG, exported model) and that the metrics it prints are
numbers. examples/backend_parity.py, which starts every backend itself
and must agree across them, has its own test: test_backend_parity.py.
"""

import dataclasses
import json
import math
import os
import re
import subprocess
import sys

import pytest

from tests.checkpoints import reference_checkpoints as ref
from tests.checkpoints.test_google_checkpoint import google_config
from tests.test_case import script_runs_under

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples")
DATA = os.path.normpath(os.path.join(ROOT, "..", "shared", "data"))
VOCABULARY = os.path.join(ref.MINILM_DIR, "vocab.txt")

TINY_MODEL = ("--config", "tiny", "--vocabulary", VOCABULARY)
TINY_RUN = (*TINY_MODEL, "--max-examples", "32", "--epochs", "1",
            "--batch-size", "16", "--sequence-length", "32")
CURVES = ("metrics.json", "curves.png", "training_log.json")
CONVERTED = ("metrics.json", "preset/config.json", "preset/model.weights.h5",
             "huggingface/config.json", "huggingface/model.safetensors",
             "huggingface/vocab.txt")
CONVERSION_DIFFERENCES = ("max_abs_difference.preset_vs_source",
                          "max_abs_difference.transformers_vs_source")


@dataclasses.dataclass
class Case:
    """One example run. In `args`, "{data}", "{out}" and "{checkpoint}"
    are filled in per run; `files` are paths under OUT; each of `metrics`
    is a path of keys into OUT/`metrics_file` whose value must be a
    finite number, also printed on stdout. `backend` is the test pass
    that runs it."""

    script: str
    args: tuple
    files: tuple
    metrics: tuple = ()
    metrics_file: str = "metrics.json"
    needs_data: bool = True
    checkpoint: str = None
    backend: str = dataclasses.field(kw_only=True)


CASES = {
    "finetune_sst2": Case(
        "finetune_glue.py", ("sst2", "{data}/sst2", *TINY_RUN,
                             "--output", "{out}"),
        CURVES, ("accuracy", "f1"), backend="torch"),
    "finetune_mrpc": Case(
        "finetune_glue.py", ("mrpc", "{data}/mrpc", *TINY_RUN,
                             "--output", "{out}"),
        CURVES, ("accuracy", "f1"), backend="jax"),
    "ner_conll2003": Case(
        "ner_conll2003.py", ("{data}/conll2003/bio", *TINY_RUN,
                             "--output", "{out}"),
        CURVES, ("precision", "recall", "f1"), backend="tensorflow"),
    # Windows of 128 tokens (SQuAD contexts are long); all of them in one
    # batch, so training and answering each compile a single shape.
    "squad_qa": Case(
        "squad_qa.py", ("{data}/squad", *TINY_MODEL, "--max-examples", "8",
                        "--epochs", "1", "--batch-size", "64",
                        "--sequence-length", "128", "--output", "{out}"),
        CURVES, ("exact_match", "f1"), backend="jax"),
    "semantic_search": Case(
        "semantic_search.py", ("{data}/sst2/test.tsv", *TINY_MODEL,
                               "--max-examples", "32", "--query", "film",
                               "--top-k", "3", "--output", "{out}"),
        ("metrics.json",), ("sentences", "results.film.0.score"),
        backend="jax"),
    "export_classifier": Case(
        "export_classifier.py", ("{data}/sst2", "{out}", *TINY_RUN),
        ("1/saved_model.pb", *CURVES), ("max_abs_difference_vs_keras",),
        backend="tensorflow"),
    # 200 lines of each book; a fifth held out, so NSP has 2+ documents.
    "pretrain_mlm_nsp": Case(
        "pretrain_mlm_nsp.py", (
            "{data}/corpus/gutenberg", "--config", "tiny", "--steps", "2",
            "--max-lines", "200", "--vocab-size", "500", "--batch-size", "8",
            "--sequence-length", "32", "--heldout-fraction", "0.2",
            "--eval-batches", "2", "--output", "{out}"),
        ("metrics.jsonl", "loss_curves.png", "evaluation.json", "vocab.txt",
         "model/config.json"),
        ("mlm_accuracy", "mlm_loss", "nsp_accuracy"),
        metrics_file="evaluation.json", backend="torch"),
    "convert_google_checkpoint": Case(
        "convert_checkpoints.py", ("{checkpoint}", "{out}"),
        CONVERTED, CONVERSION_DIFFERENCES,
        needs_data=False, checkpoint="google", backend="jax"),
    "convert_huggingface": Case(
        "convert_checkpoints.py", ("{checkpoint}", "{out}"),
        CONVERTED, CONVERSION_DIFFERENCES,
        needs_data=False, checkpoint="huggingface", backend="torch"),
    "attention_map": Case(
        "attention_map.py", (*TINY_MODEL, "--all-heads",
                             "--output", "{out}/attention.png"),
        ("attention_head0.png", "attention_head1.png"), needs_data=False,
        backend="tensorflow"),
}


def write_checkpoint(layout, directory):
    """A tiny random BERT as a Hugging Face or an original Google folder."""
    import transformers

    os.makedirs(directory)
    if layout == "huggingface":
        ref.make_huggingface("BertModel", directory)
        return directory
    model = ref.randomize(transformers.BertForPreTraining(
        transformers.BertConfig(**ref.TINY_CONFIG)))
    variables = ref.google_variables(model.state_dict(),
                                     ref.TINY_CONFIG["num_hidden_layers"])
    return ref.write_google_checkpoint(variables, directory, google_config())


def run_example(script, args):
    """Runs `python examples/SCRIPT ARGS`; returns stdout, fails on error."""
    environment = {**os.environ, "MPLBACKEND": "Agg",
                   "TF_CPP_MIN_LOG_LEVEL": "2"}
    result = subprocess.run(
        [sys.executable, os.path.join(EXAMPLES, script), *args],
        cwd=ROOT, env=environment, capture_output=True, text=True,
        timeout=600,
    )
    assert result.returncode == 0, (
        f"{script} {' '.join(args)} exited with {result.returncode}\n"
        f"--- stdout (end) ---\n{result.stdout[-4000:]}\n"
        f"--- stderr (end) ---\n{result.stderr[-4000:]}")
    return result.stdout


def lookup(metrics, path):
    value = metrics
    for key in path.split("."):
        value = value[int(key)] if isinstance(value, list) else value[key]
    return value


def printed_numbers(stdout, key):
    """Every `"key": value` the script printed (its metrics as JSON)."""
    values = re.findall(rf'"{re.escape(key)}": ([^,\s]+)', stdout)
    return [json.loads(value) for value in values]


@pytest.mark.slow
@pytest.mark.parametrize("name", [
    pytest.param(name, marks=script_runs_under(CASES[name].backend))
    for name in sorted(CASES)])
def test_example(name, tmp_path):
    case = CASES[name]
    if case.needs_data and not os.path.isdir(DATA):
        pytest.skip(f"the shared datasets are not at {DATA} (see "
                    "../shared/data/README.md); examples that read data "
                    "cannot run")
    out = str(tmp_path / "out")
    checkpoint = (write_checkpoint(case.checkpoint, str(tmp_path / "source"))
                  if case.checkpoint else None)
    args = [arg.format(data=DATA, out=out, checkpoint=checkpoint)
            for arg in case.args]

    stdout = run_example(case.script, args)

    missing = [f for f in case.files
               if not os.path.isfile(os.path.join(out, f))]
    assert not missing, f"{case.script} did not write {missing} in {out}"
    if not case.metrics:
        return
    with open(os.path.join(out, case.metrics_file)) as file:
        metrics = json.load(file)
    for path in case.metrics:
        value = lookup(metrics, path)
        assert isinstance(value, (int, float)) and math.isfinite(value), (
            f"{path} in {case.metrics_file} is {value!r}, not a number")
        printed = printed_numbers(stdout, path.split(".")[-1])
        assert printed, f"{case.script} did not print {path}"
        assert all(isinstance(v, (int, float)) and math.isfinite(v)
                   for v in printed), f"printed {path}: {printed}"
