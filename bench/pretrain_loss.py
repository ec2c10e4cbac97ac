"""The masked-LM loss and accuracy: Keras' against keras_bert's, per backend.

`BertPretrainer` compiles its masked-LM head with
`keras_bert.SparseLogitsCrossentropy` and `SparseLogitsAccuracy`, which
gather the answer's logit; Keras' `SparseCategoricalCrossentropy` (on JAX
a one-hot of the vocabulary) and `SparseCategoricalAccuracy` (an argmax)
walk the whole `(batch, masks, vocabulary)` block more often. In one
process per backend, the default recipe's model is compiled each way in
turn, `rounds` times alternating, and its training steps/s timed inside
`fit` on cached batches (`bench.pretrain_throughput.steady_rate`); the
table gives the medians and the paired ratio.

    python -m bench.pretrain_loss --base RUN_DIR --rounds 3 --table

Writes the "The masked-LM loss and accuracy" section of docs/pretraining.md
with `--table`.
"""

import argparse
import json
import os

import numpy as np

from bench.common import REPO_ROOT
from bench.common import machine_info
from bench.pretrain_throughput import add_job_bench_arguments
from bench.pretrain_throughput import run_job_worker
from bench.pretrain_throughput import write_outputs

DOC = os.path.join(REPO_ROOT, "docs", "pretraining.md")
SECTION = "### The masked-LM loss and accuracy"
VARIANTS = ("keras", "keras_bert")


def compile_arguments(variant, next_sentence_prediction):
    """`compile` keywords for one variant's masked-LM loss and accuracy."""
    import keras

    if variant == "keras_bert":
        return {}  # BertPretrainer's defaults
    name = ("accuracy" if next_sentence_prediction
            else "mlm_logits_accuracy")
    return {"loss": {"mlm_logits": keras.losses.SparseCategoricalCrossentropy(
                from_logits=True, reduction="mean_with_sample_weight")},
            "weighted_metrics": {"mlm_logits": [
                keras.metrics.SparseCategoricalAccuracy(name)]}}


def worker(args):
    import keras

    from bench.pretrain_throughput import prepared_job
    from bench.pretrain_throughput import steady_rate

    job = prepared_job(args.base, args.config, args.scratch)
    model = job.model
    optimizer = model.optimizer
    cached = job.training_batches().take(8).cache().repeat()
    rates = {variant: [] for variant in VARIANTS}
    for _ in range(args.rounds):
        for variant in VARIANTS:
            model.compile(optimizer=optimizer, **compile_arguments(
                variant, job.settings.next_sentence_prediction))
            rates[variant].append(steady_rate(model, cached, args.steps))
    return {"backend": keras.config.backend(), "config": args.config,
            "vocabulary": job.tokenizer.vocabulary_size(),
            "batch": job.settings.batch_size,
            "length": job.settings.sequence_length, "rates": rates}


def table(payload):
    lines = [
        "`python -m bench.pretrain_loss --base RUN_DIR --rounds "
        f"{payload['rounds']} --table`: one process per backend, the "
        "default recipe's model compiled with each masked-LM loss and "
        "accuracy in turn, training steps/s inside `fit` on cached "
        "batches, medians over the rounds; the ratio is the median of the "
        "rounds' paired ratios.",
        "",
        f"CPU: {payload['machine']['cpu']}, {payload['machine']['cores']} "
        f"cores, flags {' '.join(payload['machine']['isa'])}; load "
        f"{payload['machine']['load_average_at_start']} at the start.",
        "",
        "| model, backend | vocabulary | Keras' loss and accuracy, steps/s "
        "| keras_bert's, steps/s | keras_bert / Keras |",
        "|---|---|---|---|---|",
    ]
    for row in payload["rows"]:
        keras_rates = np.array(row["rates"]["keras"])
        ours = np.array(row["rates"]["keras_bert"])
        lines.append(
            f"| {row['config']} {row['batch']}x{row['length']}, "
            f"{row['backend']} | {row['vocabulary']:,} | "
            f"{np.median(keras_rates):.2f} | {np.median(ours):.2f} | "
            f"{np.median(ours / keras_rates):.2f}x |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_job_bench_arguments(parser, rounds=3, scratch="/tmp/pretrain_loss")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args)))
        return
    payload = {"machine": machine_info(), "rounds": args.rounds, "rows": []}
    for backend in args.backends:
        payload["rows"].append(run_job_worker(
            "bench.pretrain_loss", backend,
            os.path.join(args.scratch, backend),
            ["--base", args.base, "--config", args.config,
             "--rounds", str(args.rounds), "--steps", str(args.steps)]))
        print(table(payload).splitlines()[-1], flush=True)
    write_outputs(args, payload, DOC, SECTION, "bench/pretrain_loss.py", table)


if __name__ == "__main__":
    main()
