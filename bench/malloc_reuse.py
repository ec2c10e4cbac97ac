"""glibc's malloc with and without `keras_bert.tune_malloc`, per backend.

`keras_bert.tune_malloc` (what the `keras-bert` commands call at start)
lets glibc keep freed memory for reuse (`keras_bert/memory.py`);
`KERAS_BERT_TUNE_MALLOC=0` leaves glibc's defaults. The setting is per process and cannot be undone, so each
measurement is a fresh process: for every round, backend and setting in
turn, a worker builds the default recipe's model on a finished run's
corpus and vocabulary and times

* training steps/s inside `fit` on cached batches
  (`bench.pretrain_throughput.steady_rate`), and the minor page faults per
  step over 20 more steps;
* training steps/s on the run's own `tf.data` stream (the pipeline's
  threads allocate too: one arena for all threads must not slow it);
* one `predict_on_batch` of the same model on one batch (median of 20),
  and its page faults per call.

    python -m bench.malloc_reuse --base RUN_DIR --rounds 2 --table

Writes the "Memory that stays" section of docs/performance.md with
`--table`; the ratio is the median of the rounds' paired ratios.
"""

import argparse
import json
import os
import time

import numpy as np
from keras_bert import memory

# Before Keras (which bench.pretrain_throughput imports): a thread keeps the
# malloc arena it first used. A program makes this setting at its start, as
# the `keras-bert` commands do (a no-op under KERAS_BERT_TUNE_MALLOC=0).
memory.tune_malloc_unless_opted_out()

from bench.common import REPO_ROOT
from bench.common import machine_info
from bench.pretrain_throughput import add_job_bench_arguments
from bench.pretrain_throughput import run_job_worker
from bench.pretrain_throughput import write_outputs

DOC = os.path.join(REPO_ROOT, "docs", "performance.md")
SECTION = "### Measured: the default pretraining step"
SETTINGS = ("default", "tuned")


def minor_faults():
    with open("/proc/self/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[7])


def worker(args):
    import keras

    from bench.pretrain_throughput import prepared_job
    from bench.pretrain_throughput import steady_rate

    job = prepared_job(args.base, args.config, args.scratch)
    model = job.model
    cached = job.training_batches().take(8).cache().repeat()
    model.fit(cached, steps_per_epoch=3, epochs=1, verbose=0)
    rate = steady_rate(model, cached, args.steps)
    before = minor_faults()
    model.fit(cached, steps_per_epoch=20, epochs=1, verbose=0)
    step_faults = (minor_faults() - before) / 20

    inputs = keras.tree.map_structure(np.asarray, next(iter(cached))[0])
    model.predict_on_batch(inputs)
    times = []
    before = minor_faults()
    for _ in range(20):
        start = time.perf_counter()
        model.predict_on_batch(inputs)
        times.append(time.perf_counter() - start)
    predict_faults = (minor_faults() - before) / 20
    # Last, as a run trains: the tf.data stream's threads allocate too (and
    # its buffers outlive the call).
    streamed = steady_rate(model, job.training_batches(), args.steps)
    return {"backend": keras.config.backend(), "config": args.config,
            "batch": job.settings.batch_size,
            "length": job.settings.sequence_length, "steps_per_s": rate,
            "streamed_steps_per_s": streamed,
            "step_faults": step_faults,
            "predict_ms": 1000 * float(np.median(times)),
            "predict_faults": predict_faults}


def table(payload):
    lines = [
        "`python -m bench.malloc_reuse --base RUN_DIR --rounds "
        f"{payload['rounds']} --table`: a fresh process per round, backend "
        "and setting (glibc's defaults with `KERAS_BERT_TUNE_MALLOC=0`, or "
        "keras_bert's), the default recipe's model (BERT "
        f"{payload['config']}); medians over the rounds, the speed-up is "
        "the median of the rounds' paired ratios.",
        "",
        f"CPU: {payload['machine']['cpu']}, {payload['machine']['cores']} "
        f"cores, flags {' '.join(payload['machine']['isa'])}; load "
        f"{payload['machine']['load_average_at_start']} at the start.",
        "",
        "| backend | training steps/s, glibc defaults | keras_bert's "
        "settings | speed-up | page faults a step | streamed steps/s, "
        "defaults | keras_bert's | speed-up | predict ms (faults a call), "
        "defaults | keras_bert's | speed-up |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for backend in payload["backends"]:
        runs = {s: [r for r in payload["rows"] if r["backend"] == backend
                    and r["setting"] == s] for s in SETTINGS}
        if not all(runs.values()):
            continue

        def values(setting, key):
            return np.array([r[key] for r in runs[setting]])

        default, tuned = values("default", "steps_per_s"), values(
            "tuned", "steps_per_s")
        slow, fast = values("default", "predict_ms"), values(
            "tuned", "predict_ms")
        stream = [values(s, "streamed_steps_per_s")
                  if all("streamed_steps_per_s" in r for r in runs[s])
                  else None for s in SETTINGS]
        streamed = ("| | | |" if stream[0] is None or stream[1] is None else
                    f"| {np.median(stream[0]):.2f} | "
                    f"{np.median(stream[1]):.2f} | "
                    f"{np.median(stream[1] / stream[0]):.2f}x |")
        lines.append(
            f"| {backend} | {np.median(default):.2f} | {np.median(tuned):.2f}"
            f" | **{np.median(tuned / default):.2f}x** | "
            f"{np.median(values('default', 'step_faults')):,.0f} -> "
            f"{np.median(values('tuned', 'step_faults')):,.0f} {streamed} "
            f"{np.median(slow):.1f} "
            f"({np.median(values('default', 'predict_faults')):,.0f}) | "
            f"{np.median(fast):.1f} "
            f"({np.median(values('tuned', 'predict_faults')):,.0f}) | "
            f"{np.median(slow / fast):.2f}x |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_job_bench_arguments(parser, rounds=2, scratch="/tmp/malloc_reuse")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args)))
        return
    payload = {"machine": machine_info(), "rounds": args.rounds,
               "config": args.config, "backends": args.backends, "rows": []}
    for _ in range(args.rounds):
        for backend in args.backends:
            for setting in SETTINGS:
                row = run_job_worker(
                    "bench.malloc_reuse", backend,
                    os.path.join(args.scratch, backend),
                    ["--base", args.base, "--config", args.config,
                     "--steps", str(args.steps)],
                    env={memory.OPT_OUT_VARIABLE:
                         "0" if setting == "default" else "1"})
                row["setting"] = setting
                payload["rows"].append(row)
                print(setting, json.dumps(row), flush=True)
    print(table(payload))
    write_outputs(args, payload, DOC, SECTION, "bench/malloc_reuse.py", table)


if __name__ == "__main__":
    main()
