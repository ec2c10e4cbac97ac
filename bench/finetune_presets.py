"""Fine-tuning as a task-preset user runs it: keras_bert against keras-hub.

Both libraries load the same Hugging Face folder (all-MiniLM-L6-v2) as a
classifier that carries its preprocessor and comes compiled, and `fit`
raw SST-2 sentences (the first `--train-size` of `sst2/train.tsv`, in
file order) with `batch_size=32`, then `predict` the 872 dev sentences
(`sst2/test.tsv`, the GLUE dev set). Each setting runs in its own fresh
process, one after the other, under `KERAS_BACKEND`:

* keras_bert: `BertClassifier.from_preset(dir, num_classes=2)` (its
  default: packed to the checkpoint's 512 positions, each batch cut to
  the padding its rows use), the same at `sequence_length=128`, and at
  128 with the cut off (`trims_padding = None`: every batch at 128, as
  before the cut).
* keras-hub: `keras_hub.models.BertTextClassifier.from_preset(dir,
  num_classes=2)` at `sequence_length=128`; `--hub-default` adds its
  default length for this folder (256), which is slow on CPUs.
* LoRA (`--only LoRA`): each library's classifier with
  `backbone.enable_lora(--lora-rank)` (keras_bert at its default length,
  keras-hub at 128), at `--learning-rate` if given (keras_bert: its
  recipe at that peak rate; keras-hub: Adam at that rate, its default
  loss and metric).

Reported: wall seconds of the first epoch (from the `fit` call, with
compiling) and of the last, steps per second in the second, dev accuracy after the epochs,
and wall seconds of `predict` on the dev set.

    KERAS_BACKEND=tensorflow .venv/bin/python -m bench.finetune_presets \\
        --output /tmp/bench_results/finetune_presets_tf.json
"""

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import common  # noqa: E402
from bench.finetune_common import DATA  # noqa: E402

# Setting -> (library, sequence length, cut per batch, LoRA on the backbone).
SETTINGS = {
    "keras_bert (default, 512 cut per batch)": ("keras_bert", None, True, False),
    "keras_bert, 128 cut per batch": ("keras_bert", 128, True, False),
    "keras_bert, 128 not cut": ("keras_bert", 128, False, False),
    "keras-hub, 128": ("keras_hub", 128, None, False),
    "keras-hub (default, 256)": ("keras_hub", None, None, False),
    "keras_bert LoRA (default, 512 cut per batch)": (
        "keras_bert", None, True, True),
    "keras-hub LoRA, 128": ("keras_hub", 128, None, True),
}


def read_sst2(name, count=None):
    from keras_bert.preprocessing.tasks import read_table

    table = read_table(os.path.join(DATA, "sst2", name), ["sentence"],
                       "label")
    texts, labels = table["texts"][0][:count], table["labels"][:count]
    return texts, [int(label) for label in labels]


def build(library, sequence_length, cut, lora, args):
    if library == "keras_bert":
        import keras_bert

        if not cut:
            keras_bert.BertClassifier.trims_padding = None
        model = keras_bert.BertClassifier.from_preset(
            common.minilm_dir(), num_classes=2,
            sequence_length=sequence_length)
        if lora:
            model.backbone.enable_lora(args.lora_rank)
        if args.learning_rate:
            model.compile(learning_rate=args.learning_rate)
        return model
    import keras
    import keras_hub

    model = keras_hub.models.BertTextClassifier.from_preset(
        common.minilm_dir(), num_classes=2)
    if sequence_length:
        model.preprocessor.sequence_length = sequence_length
    if lora:
        model.backbone.enable_lora(args.lora_rank)
    if args.learning_rate:
        # keras-hub's own default compile, at another rate.
        model.compile(
            optimizer=keras.optimizers.Adam(args.learning_rate),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=[keras.metrics.SparseCategoricalAccuracy()])
    return model


def worker(name, args):
    import keras
    import numpy as np

    keras.utils.set_random_seed(args.seed)
    texts, labels = read_sst2("train.tsv", args.train_size)
    dev_texts, dev_labels = read_sst2("test.tsv")
    model = build(*SETTINGS[name], args)
    marks = [time.perf_counter()]
    # One `fit`, as a user runs it (keras_bert sizes its schedule from it).
    model.fit(texts, np.array(labels), batch_size=32, epochs=args.epochs,
              verbose=0, callbacks=[keras.callbacks.LambdaCallback(
                  on_epoch_end=lambda *_: marks.append(time.perf_counter()))])
    epochs = [b - a for a, b in zip(marks, marks[1:])]
    start = time.perf_counter()
    logits = np.asarray(model.predict(dev_texts, batch_size=32, verbose=0))
    predict = time.perf_counter() - start
    steps = -(-len(texts) // 32)
    return {"setting": name, "backend": keras.config.backend(),
            "epoch_seconds": epochs, "steps_per_epoch": steps,
            "steps_per_second": steps / epochs[-1],
            "dev_accuracy": float(np.mean(logits.argmax(-1) == dev_labels)),
            "predict_seconds": predict}


def wanted(name, args):
    """`--only` filters by name; LoRA settings run only when an `--only`
    part names LoRA, keras-hub at 256 only with `--hub-default`."""
    if args.only and not any(part in name for part in args.only):
        return False
    if "LoRA" in name:
        return any("LoRA" in part for part in args.only or ())
    return args.hub_default or "(default, 256)" not in name


def table(results):
    rows = ["| setting | first epoch s | next epoch s | steps/s | dev accuracy "
            "| predict s (872) |", "|---|---:|---:|---:|---:|---:|"]
    for r in results:
        rows.append(
            f"| {r['setting']} | {r['epoch_seconds'][0]:.1f} | "
            f"{r['epoch_seconds'][-1]:.1f} | {r['steps_per_second']:.2f} | "
            f"{100 * r['dev_accuracy']:.1f}% | {r['predict_seconds']:.1f} |")
    return "\n".join(rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train-size", type=int, default=512)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hub-default", action="store_true")
    parser.add_argument("--lora-rank", type=int, default=8,
                        help="rank of the LoRA settings' adapters")
    parser.add_argument("--learning-rate", type=float,
                        help="peak rate instead of each library's default")
    parser.add_argument("--only", nargs="*",
                        help="run the settings whose name holds one of these")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--output")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args)))
        return
    results = []
    for name in SETTINGS:
        if not wanted(name, args):
            continue
        command = [sys.executable, "-m", "bench.finetune_presets",
                   "--worker", name, "--train-size", str(args.train_size),
                   "--epochs", str(args.epochs), "--seed", str(args.seed),
                   "--lora-rank", str(args.lora_rank)]
        if args.learning_rate:
            command += ["--learning-rate", str(args.learning_rate)]
        done = subprocess.run(command, capture_output=True, text=True,
                              check=True)
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(table(results[-1:]).splitlines()[-1], flush=True)
    print(table(results))
    if args.output:
        common.write_json(args.output, {"machine": common.machine_info(),
                                        "args": vars(args),
                                        "results": results})


if __name__ == "__main__":
    main()
