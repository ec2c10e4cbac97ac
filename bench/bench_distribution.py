"""Data-parallel overhead on virtual CPU devices.

Trains the same BertPretrainer with the same global batch on 1, 2, 4 and 8
devices made by splitting the host CPU (`use_virtual_cpu_devices`) and
reports throughput relative to one device. The virtual devices share the
machine's cores, so no speed-up is possible here: the ratio measures what
data parallelism costs (splitting the batch, all-reducing gradients,
dispatching one program per device), not what it gains on real
accelerators. Each point runs in its own process, since the device count is
fixed when the backend starts. Writes the table into the "Data-parallel
overhead" section of docs/performance.md.

    python bench/bench_distribution.py                      # both backends
    python bench/bench_distribution.py --tf-devices 1 2     # TF on 1 and 2
    python bench/bench_distribution.py --backends jax --devices 1 8 --steps 10
"""

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from bench.common import write_section

DOC = os.path.join(REPO, "docs", "performance.md")
SECTION = "## Data-parallel overhead"


def measure(args):
    """One point: runs in a subprocess with KERAS_BACKEND already set."""
    from keras_bert.training import distribution

    distribution.use_virtual_cpu_devices(args.measure)
    import keras
    import tensorflow as tf

    import keras_bert

    engine = None
    if args.measure > 1:
        engine = distribution.configure_distribution("data_parallel")
    config = keras_bert.BertBackbone.from_preset(args.config).get_config()
    rng = np.random.default_rng(0)
    batch, length, masks = args.global_batch, args.length, args.masks
    x = {
        "token_ids": rng.integers(5, config["vocabulary_size"], (batch, length)),
        "segment_ids": (np.arange(length) >= length // 2)[None].repeat(batch, 0),
        "padding_mask": np.ones((batch, length), "int32"),
        "mask_positions": np.sort(
            rng.random((batch, length)).argsort(axis=1)[:, :masks], axis=1
        ),
    }
    y = {
        "mlm_logits": rng.integers(5, config["vocabulary_size"], (batch, masks)),
        "nsp_logits": rng.integers(0, 2, batch),
    }
    dataset = tf.data.Dataset.from_tensors(
        (keras.tree.map_structure(lambda a: a.astype("int32"), x), y)
    ).repeat()
    dataset = distribution.distribute_dataset(dataset, engine)

    times = []

    def on_train_batch_end(step, logs):
        float(logs["loss"])  # waits for the step to finish on every backend
        times.append(time.perf_counter())

    record = keras.callbacks.LambdaCallback(on_train_batch_end=on_train_batch_end)
    with distribution.distribution_scope(engine):
        backbone = keras_bert.BertBackbone.from_preset(args.config, dropout=0.0)
        model = keras_bert.BertPretrainer(backbone)
        model.compile(
            optimizer=keras.optimizers.AdamW(1e-4),
            loss={
                "mlm_logits": keras.losses.SparseCategoricalCrossentropy(
                    from_logits=True
                ),
                "nsp_logits": keras.losses.SparseCategoricalCrossentropy(
                    from_logits=True
                ),
            },
        )
        model.fit(
            dataset, epochs=1, steps_per_epoch=args.warmup + args.steps,
            callbacks=[record], verbose=0,
        )
    seconds = times[-1] - times[args.warmup - 1]
    return {
        "devices": args.measure,
        "replicas": distribution.num_replicas(engine),
        "steps_per_second": args.steps / seconds,
    }


def run_point(backend, devices, args):
    command = [
        sys.executable, os.path.abspath(__file__), "--measure", str(devices),
        "--config", args.config, "--global-batch", str(args.global_batch),
        "--length", str(args.length), "--masks", str(args.masks),
        "--steps", str(args.steps), "--warmup", str(args.warmup),
    ]
    env = {key: value for key, value in os.environ.items()
           if key != "XLA_FLAGS"}
    env.update(KERAS_BACKEND=backend, PYTHONPATH=REPO,
               TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(
            f"{backend} on {devices} devices failed:\n{done.stderr[-3000:]}"
        )
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(rows, args):
    lines = [
        "| backend | devices | per-replica batch | steps/s | efficiency |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['backend']} | {row['devices']} | "
            f"{args.global_batch // row['replicas']} | "
            f"{row['steps_per_second']:.2f} | {row['efficiency']:.2f} |"
        )
    return "\n".join(lines)


def _load():
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except OSError:
        return "unknown"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", nargs="+", default=["jax", "tensorflow"])
    parser.add_argument("--devices", nargs="+", type=int, default=[1, 2, 4, 8],
                        help="device counts (default 1 2 4 8)")
    parser.add_argument("--tf-devices", nargs="+", type=int,
                        help="device counts for TensorFlow (default: "
                        "--devices)")
    parser.add_argument("--config", default="tiny")
    parser.add_argument("--global-batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--masks", type=int, default=20)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--no-write", action="store_true",
                        help="print the table without touching the docs")
    parser.add_argument("--measure", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(args)))
        return
    counts = {backend: args.devices for backend in args.backends}
    if args.tf_devices and "tensorflow" in counts:
        counts["tensorflow"] = args.tf_devices
    if any(1 not in devices for devices in counts.values()):
        parser.error("--devices and --tf-devices must include 1, the "
                     "baseline.")

    command = " ".join(["python bench/bench_distribution.py",
                        *map(shlex.quote, argv if argv is not None
                             else sys.argv[1:])])
    load_before = _load()
    rows = []
    for backend in args.backends:
        points = {}
        for devices in sorted(counts[backend]):
            points[devices] = run_point(backend, devices, args)
            print(backend, points[devices], flush=True)
        for devices, point in points.items():
            efficiency = point["steps_per_second"] / points[1]["steps_per_second"]
            rows.append({"backend": backend, "efficiency": efficiency, **point})

    text = "\n".join([
        f"Written by `{command}` "
        f"({time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPU cores, "
        f"{platform.processor() or platform.machine()}; 1-minute load "
        f"average {load_before} before, {_load()} after). BertPretrainer "
        f"`{args.config}`, global batch {args.global_batch}, sequence length "
        f"{args.length}, {args.masks} masks, data parallel over virtual CPU "
        "devices (JAX: `keras.distribution.DataParallel`; TensorFlow: "
        f"`MirroredStrategy`), {args.steps} timed steps after "
        f"{args.warmup} warm-up steps.",
        "",
        "**This is not a speed-up measurement.** The virtual devices share "
        f"the same {os.cpu_count()} CPU cores, so no speed-up is possible: "
        "efficiency (steps/s relative to one device, same global batch) "
        "below 1.00 is what data parallelism costs here (splitting the "
        "batch, all-reducing the gradients, running one program per "
        "device on the same cores), and says nothing about the speed-up "
        "real accelerators give. Each point is one run in its own process, "
        "on a machine shared with other jobs: differences of 10-20% are "
        "within the noise. See [Distributed training](distributed.md).",
        "",
        table(rows, args),
    ])
    print(text)
    if not args.no_write:
        write_section(DOC, SECTION, f"{SECTION}\n\n{text}\n")


if __name__ == "__main__":
    main()
