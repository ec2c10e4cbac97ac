"""Pretraining throughput: tokens/s against the machine's GEMM ceiling,
and where a step's time goes.

For each model size and backend, in one process per backend:

* **pipeline**: batches/s of the `tf.data` input pipeline alone
  (`PretrainingJob.training_batches`, nothing trained);
* **cached**: training steps/s on batches already in memory (the step
  itself: compute plus Keras/backend overhead);
* **streamed**: training steps/s as a run trains (pipeline and step
  together, the pipeline prefetching in parallel).

Both step rates are timed inside `fit` after its first 10 steps, as a
run of thousands of steps sees them.

The step's FLOPs are counted as 3x the forward pass (forward, and a
backward pass of twice its cost): the encoder (`bench.flops`), the MLM
head at the masked positions only (transform and tied decoder) and the
NSP head. FLOPs / GEMM ceiling is the time the step would take if it ran
at the speed of one layer's four weight GEMMs in the fastest library
(measured in the same run): "compute floor". The profile splits a streamed
step into that floor, the rest of the cached step (framework, memory-bound
ops, small kernels) and what the pipeline adds on top. The pipeline is
off the critical path when streamed and cached rates agree.

    python -m bench.pretrain_throughput --base /tmp/runs/base \\
        --output /tmp/bench_results/pretrain_throughput.json --table

Writes the "Throughput" section of docs/pretraining.md with `--table`.
"""

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import time

import keras

from bench import flops
from bench.common import REPO_ROOT
from bench.common import WORKER_ENV
from bench.common import machine_info
from bench.common import write_section
from keras_bert.training.pretraining.step_budget import StepBudget

DOC = os.path.join(REPO_ROOT, "docs", "pretraining.md")
SECTION = "### Throughput"


def step_flops(size, batch, length, vocabulary_size, masks):
    config = {"hidden_size": size["hidden_dim"],
              "intermediate_size": size["intermediate_dim"],
              "num_hidden_layers": size["num_layers"]}
    hidden = size["hidden_dim"]
    forward = flops.encoder_forward_flops(config, batch, length)
    predicted = batch * masks
    forward += 2 * predicted * (hidden * hidden + hidden * vocabulary_size)
    forward += 2 * batch * hidden * 2
    return 3 * forward


def gemm_ceiling(size, tokens, calls=5):
    """Best FLOP/s of one layer's weight GEMMs over the libraries here."""
    shapes = flops.layer_gemm_shapes(tokens, size["hidden_dim"],
                                     size["intermediate_dim"])
    work = flops.gemm_flops(shapes)
    best = {}
    for library in ("numpy", "tensorflow", "jax", "torch"):
        try:
            run = flops.gemm_callable(library, "float32", tokens,
                                      size["hidden_dim"],
                                      size["intermediate_dim"])
        except ImportError:
            continue
        run()
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            run()
            times.append(time.perf_counter() - start)
        best[library] = work / sorted(times)[len(times) // 2]
    return max(best.values()), best


def steady_rate(model, batches, steps, skip=10):
    """Steps/s of `fit` after its first `skip` steps: a run's rate, without
    the start of a `fit` call (tracing for a new dataset, filling the
    pipeline's buffers), which a run of thousands of steps pays once. The
    budgeted run's own measurement, over more steps."""
    budget = StepBudget(0, 0, group_steps=skip,
                        timed_groups=max(1, steps // skip))
    return budget.measure_step_rate(model, batches)


def prepared_job(base, config, scratch):
    """A default-recipe `PretrainingJob` on a finished run's corpus and
    vocabulary (`base`), its model built and compiled, in `scratch`."""
    from keras_bert.training.pretraining.pretraining_job import PretrainingJob
    from keras_bert.training.pretraining.pretraining_settings import (
        PretrainingSettings,
    )

    settings = PretrainingSettings(
        corpus_files=sorted(glob.glob(os.path.join(base, "corpus", "*.txt"))),
        corpus_format="sentences", vocabulary=os.path.join(base, "vocab.txt"),
        config=config, steps=1000, minutes=None)
    job = PretrainingJob(os.path.join(scratch, config), settings,
                         print_fn=None)
    job.prepare()
    return job


def run_job_worker(module, backend, scratch, arguments, env=None):
    """Runs `python -m module --worker ARGUMENTS --scratch scratch` under
    `backend` (and `env`'s variables) in a fresh `scratch` (a job refuses
    a used directory) and returns the JSON of its last output line."""
    shutil.rmtree(scratch, ignore_errors=True)
    command = [sys.executable, "-m", module, "--worker", *arguments,
               "--scratch", scratch]
    completed = subprocess.run(
        command, cwd=REPO_ROOT, capture_output=True, text=True,
        env={**os.environ, **WORKER_ENV, **(env or {}),
             "KERAS_BACKEND": backend})
    if completed.returncode:
        raise SystemExit(completed.stderr[-4000:])
    return json.loads(completed.stdout.strip().splitlines()[-1])


def add_job_bench_arguments(parser, rounds, scratch):
    """The flags of a bench that runs `run_job_worker` per backend and
    round (`bench.pretrain_loss`, `bench.malloc_reuse`)."""
    parser.add_argument("--base", required=True)
    parser.add_argument("--config", default="tiny")
    parser.add_argument("--backends", nargs="+",
                        default=["tensorflow", "jax", "torch"])
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--scratch", default=scratch)
    parser.add_argument("--output")
    parser.add_argument("--table", action="store_true")
    parser.add_argument("--worker", action="store_true")


def write_outputs(args, payload, doc, section, script, table):
    """`--output`'s JSON and `--table`'s docs section of a bench run."""
    if args.output:
        with open(args.output, "w") as file:
            json.dump(payload, file, indent=1)
    if args.table:
        write_section(doc, section, f"{section}\n\n<!-- written by "
                      f"{script} --table -->\n\n" + table(payload))


def worker(args):
    import keras

    from keras_bert.configs import get_backbone_config

    job = prepared_job(args.base, args.config, args.scratch)
    s = job.settings
    batches = job.training_batches()
    steps = args.steps

    start = time.perf_counter()
    for _ in batches.take(steps):
        pass
    pipeline = steps / (time.perf_counter() - start)

    cached = batches.take(8).cache().repeat()
    job.model.fit(cached, steps_per_epoch=3, epochs=1, verbose=0)
    cached_rate = steady_rate(job.model, cached, steps)
    streamed = steady_rate(job.model, batches, steps)

    size = get_backbone_config(s.config)
    masks = job.training_batches().element_spec[0]["mask_positions"].shape[1]
    work = step_flops(size, s.batch_size, s.sequence_length,
                      job.tokenizer.vocabulary_size(), masks)
    ceiling, per_library = gemm_ceiling(size, s.batch_size * s.sequence_length)
    return {"backend": keras.config.backend(), "config": s.config,
            "batch": s.batch_size, "length": s.sequence_length,
            "pipeline_batches_per_s": pipeline, "cached_steps_per_s":
            cached_rate, "streamed_steps_per_s": streamed,
            "step_gflop": work / 1e9, "ceiling_gflops": ceiling / 1e9,
            "gemm_gflops": {k: v / 1e9 for k, v in per_library.items()}}


def table(payload):
    lines = [
        "`python -m bench.pretrain_throughput --base RUN_DIR --steps 60 "
        "--table`: each model and backend in its own process, the default "
        "recipe's batch; step rates timed inside `fit` after its first 10 "
        "steps; GEMM ceiling: one layer's weight GEMMs at the batch's "
        "token count in the fastest library here, float32, the best of "
        "the measurements every row's process made for its model size "
        "(one process's can be low when the machine is busy).",
        "",
        f"CPU: {payload['machine']['cpu']}, {payload['machine']['cores']} "
        f"cores, flags {' '.join(payload['machine']['isa'])}; load "
        f"{payload['machine']['load_average_at_start']} at the start.",
        "",
        "| model, backend | tokens/s (streamed) | of GEMM ceiling | pipeline "
        "batches/s | cached steps/s | step: compute floor / rest of step / "
        "pipeline |",
        "|---|---|---|---|---|---|",
    ]
    ceilings = {}
    for row in payload["rows"]:
        ceilings[row["config"]] = max(ceilings.get(row["config"], 0),
                                      row["ceiling_gflops"])
    for row in payload["rows"]:
        tokens = row["batch"] * row["length"]
        step = 1 / row["streamed_steps_per_s"]
        ceiling = ceilings[row["config"]]
        floor = row["step_gflop"] / ceiling
        rest = 1 / row["cached_steps_per_s"] - floor
        extra = max(0.0, step - 1 / row["cached_steps_per_s"])
        lines.append(
            f"| {row['config']} {row['batch']}x{row['length']}, "
            f"{row['backend']} | {tokens * row['streamed_steps_per_s']:,.0f}"
            f" | {row['step_gflop'] * row['streamed_steps_per_s'] / ceiling:.0%}"
            f" | {row['pipeline_batches_per_s']:.1f} | "
            f"{row['cached_steps_per_s']:.2f} | {floor * 1e3:.0f} / "
            f"{rest * 1e3:.0f} / {extra * 1e3:.0f} ms |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", required=True)
    parser.add_argument("--configs", nargs="+", default=["tiny", "mini"])
    parser.add_argument("--backends", nargs="+",
                        default=["tensorflow", "jax", "torch"])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--scratch", default="/tmp/pretrain_throughput")
    parser.add_argument("--output")
    parser.add_argument("--table", action="store_true")
    parser.add_argument("--worker", action="store_true")
    parser.add_argument("--config", default="tiny")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args)))
        return
    payload = {"machine": machine_info(), "rows": []}
    for config in args.configs:
        for backend in args.backends:
            payload["rows"].append(run_job_worker(
                "bench.pretrain_throughput", backend,
                os.path.join(args.scratch, backend),
                ["--base", args.base, "--config", config,
                 "--steps", str(args.steps)]))
            print(table(payload).splitlines()[-1], flush=True)
    write_outputs(args, payload, DOC, SECTION, "bench/pretrain_throughput.py",
                  table)


if __name__ == "__main__":
    main()
