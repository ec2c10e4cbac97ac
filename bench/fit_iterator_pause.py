"""The pause between `fit`'s last step and `fit` returning, with tf.data's
autotuning thread on and off (`prefetch_for_fit`).

Keras drops its `tf.data` iterator when `fit` ends; with autotuning on,
the iterator's background tuning thread has to stop first, and at times
it sleeps out the rest of its tuning period instead. Each run here is a
short `keras-bert pretrain` with a time budget (built-in corpus, BERT
tiny, the default recipe; its two fits: the step-rate timing and the
training) and every fit records how long it took to return after the
callbacks' `on_train_end`. Runs with the stream as the package builds
it (autotuning off) and with autotuning switched back on alternate, in
one process per backend.

    python -m bench.fit_iterator_pause --rounds 3 --minutes 1.25
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from bench import common

STREAMS = ("prefetch_for_fit", "autotuning on")


def worker(rounds, minutes):
    import keras
    import tensorflow as tf

    from keras_bert.training.pretraining.pretraining_job import PretrainingJob
    from keras_bert.training.pretraining.pretraining_settings import (
        PretrainingSettings,
    )

    class EndClock(keras.callbacks.Callback):
        def on_train_end(self, logs=None):
            self.ended = time.perf_counter()

    autotuned = tf.data.Options()
    autotuned.autotune.enabled = True
    settings = PretrainingSettings(minutes=minutes)
    pauses = {name: [] for name in STREAMS}
    for _ in range(rounds):
        for name in STREAMS:
            job = PretrainingJob(tempfile.mkdtemp(), settings, print_fn=None)
            job.prepare()
            # Later runs reuse the first one's corpus and vocabulary.
            settings = job.settings.replace(
                vocabulary=job.path("vocab.txt"))
            if name == "autotuning on":
                stream = job.training_batches
                job.training_batches = lambda skip_steps=0, stream=stream: (
                    stream(skip_steps).with_options(autotuned))
            fit = job.model.fit

            def timed_fit(*args, fit=fit, name=name, **kwargs):
                clock = EndClock()
                kwargs["callbacks"] = [*(kwargs.get("callbacks") or []),
                                       clock]
                history = fit(*args, **kwargs)
                pauses[name].append(time.perf_counter() - clock.ended)
                return history

            job.model.fit = timed_fit
            job.train()
    return pauses


def table(results):
    lines = ["| backend | input stream | fits | paused > 1 s | "
             "longest pause |", "|---|---|---:|---:|---:|"]
    for backend, pauses in results.items():
        for name, values in pauses.items():
            long = [v for v in values if v > 1.0]
            lines.append(f"| {backend} | `{name}` | {len(values)} | "
                         f"{len(long)} | {max(values):.1f} s |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backends", default="tensorflow,jax,torch")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--minutes", type=float, default=1.25,
                        help="time budget of each run")
    parser.add_argument("--worker", action="store_true")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.rounds, args.minutes)))
        return
    machine = common.machine_info()
    results = {}
    for backend in args.backends.split(","):
        env = {**os.environ, **common.WORKER_ENV, "KERAS_BACKEND": backend}
        out = subprocess.run(
            [sys.executable, "-m", "bench.fit_iterator_pause", "--worker",
             "--rounds", str(args.rounds), "--minutes", str(args.minutes)],
            env=env, cwd=common.REPO_ROOT, check=True, capture_output=True,
            text=True).stdout
        results[backend] = json.loads(out.strip().splitlines()[-1])
        print(backend, json.dumps(results[backend]), flush=True)
    print(f"CPU: {machine['cpu']}, {machine['cores']} cores, flags "
          f"{' '.join(machine['isa'])}; load "
          f"{machine['load_average_at_start']} at the start, "
          f"{os.getloadavg()[0]:.2f} at the end.")
    print(table(results))


if __name__ == "__main__":
    main()
