"""Latency of `Task.predict` on a few raw strings: what a user calling
`classifier.predict(["some text"])` waits for.

    .venv/bin/python bench/bench_predict_latency.py [--repeats 7] [--no-write]

The classifier is all-MiniLM-L6-v2 with a 2-class head, packed length
128. Under each backend (a process each), in turn within every repeat:
`predict` on 1 and on 32 SST-2 dev sentences as it runs now (raw input of
up to `task_dataset.MAX_EAGER_EXAMPLES` examples is preprocessed at once
and the model runs on the arrays), the same call through the `tf.data`
pipeline (the path before, forced by setting that limit to 0), and, in
the same process, `transformers` (`BertForSequenceClassification` on the
same weights, its fast tokenizer, `torch.no_grad`). Medians over repeats
after one warm-up call each. Writes the "## Predict latency on raw text"
section of docs/performance.md.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from unittest import mock

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench.common import SST2_DEV  # noqa: E402
from bench.common import WORKER_ENV  # noqa: E402
from bench.common import machine_info  # noqa: E402
from bench.common import minilm_dir  # noqa: E402
from bench.common import write_section  # noqa: E402

DOC = os.path.join(ROOT, "docs", "performance.md")
SECTION = "## Predict latency on raw text"
BACKENDS = ("tensorflow", "jax", "torch")
SIZES = (1, 32)


def sentences(count):
    with open(SST2_DEV, encoding="utf-8") as handle:
        return [line.split("\t")[0] for line in handle][1:count + 1]


def worker(repeats):
    """Times every case under this process's backend; prints JSON."""
    import torch
    import transformers

    import keras_bert
    from keras_bert.preprocessing.tasks import task_dataset

    model = keras_bert.BertClassifier.from_preset(
        minilm_dir(), num_classes=2, sequence_length=128)
    reference = transformers.BertForSequenceClassification.from_pretrained(
        minilm_dir(), num_labels=2).eval()
    tokenizer = transformers.BertTokenizerFast.from_pretrained(minilm_dir())

    def run_transformers(texts):
        with torch.no_grad():
            reference(**tokenizer(texts, padding=True, truncation=True,
                                  max_length=128, return_tensors="pt"))

    def run_pipeline(texts):
        # Neither the host tokenizer nor the arrays path: `tf.data`.
        with mock.patch.object(task_dataset, "MAX_EAGER_EXAMPLES", 0), \
                mock.patch.object(model.preprocessor, "host_arrays",
                                  lambda x: None):
            model.predict(texts, verbose=0)

    cases = {}
    for size in SIZES:
        texts = sentences(size)
        cases[f"keras_bert, {size}"] = lambda t=texts: model.predict(
            t, verbose=0)
        cases[f"keras_bert via tf.data, {size}"] = (
            lambda t=texts: run_pipeline(t))
        cases[f"transformers, {size}"] = lambda t=texts: run_transformers(t)
    times = {name: [] for name in cases}
    for name, call in cases.items():
        call()  # warm-up: tracing, compilation
    for _ in range(repeats):
        for name, call in cases.items():
            start = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - start)
    print(json.dumps({name: statistics.median(values)
                      for name, values in times.items()}))


def measure(repeats):
    results = {}
    for backend in BACKENDS:
        env = {**os.environ, **WORKER_ENV, "KERAS_BACKEND": backend}
        output = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--worker",
             "--repeats", str(repeats)], env=env, cwd=ROOT, check=True,
            capture_output=True, text=True).stdout
        results[backend] = json.loads(output.strip().splitlines()[-1])
        print(backend, results[backend], flush=True)
    return results


def table(results, machine, repeats):
    lines = [
        SECTION, "",
        "`predict` on raw strings, all-MiniLM-L6-v2 classifier, packed "
        "length 128 (`bench/bench_predict_latency.py`, median of "
        f"{repeats} calls after a warm-up). Raw input of up to 8,192 "
        "examples is preprocessed at once and the classifier runs on the "
        "arrays in length-bucketed batches; \"via tf.data\" is the path "
        "before, every example padded to 128, where every call "
        "started a pipeline whose preprocessing function TensorFlow "
        "instantiates and optimizes again. transformers: its fast "
        "tokenizer and `BertForSequenceClassification`, same process.", "",
        "| backend | sentences | keras_bert | via tf.data (before) "
        "| transformers | keras_bert vs before | vs transformers |",
        "|---|---|---|---|---|---|---|",
    ]
    for backend, times in results.items():
        for size in SIZES:
            now = times[f"keras_bert, {size}"]
            before = times[f"keras_bert via tf.data, {size}"]
            reference = times[f"transformers, {size}"]
            lines.append(
                f"| {backend} | {size} | {now * 1e3:.0f} ms "
                f"| {before * 1e3:.0f} ms | {reference * 1e3:.0f} ms "
                f"| {before / now:.1f}x faster | {reference / now:.2f}x |")
    lines += ["", f"Machine: {machine['cpu']}, {machine['cores']} cores, "
              f"flags {' '.join(machine['isa']) or 'none of note'}, load "
              f"{machine['load_average_at_start']} at the start."]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--worker", action="store_true")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    if args.worker:
        worker(args.repeats)
        return
    machine = machine_info()
    text = table(measure(args.repeats), machine, args.repeats)
    print(text)
    if not args.no_write:
        write_section(DOC, SECTION, text)


if __name__ == "__main__":
    main()
