"""Next-sentence prediction on or off, at a fixed pretraining budget, and
what it does downstream.

Two `keras-bert pretrain` runs on the built-in corpus that differ only in
`--nsp` / `--no-nsp` (same steps, batch, length, vocabulary and seed: equal compute,
since the NSP head is one 2-way layer), each then fine-tuned with
`keras-bert finetune` on MRPC (sentence pairs, the kind of task NSP was
meant to help) and on SST-2 (single sentences), scored on their dev sets.
Writes the "Next-sentence prediction on or off" section of
docs/pretraining.md with `--table`.

    python -m bench.nsp_ablation --base /tmp/runs/base --steps 1600 \\
        --output /tmp/nsp_ablation --table

`--base DIR` is a `keras-bert pretrain` run directory (its corpus/ and
vocab.txt are used).
"""

import argparse
import glob
import json
import os
import subprocess
import sys

from bench.common import write_section

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(os.path.dirname(REPO), "shared", "data")
DOC = os.path.join(REPO, "docs", "pretraining.md")
SECTION = "### Next-sentence prediction on or off"
TASKS = {
    "MRPC": ["--task", "pair", "--train", f"{DATA}/mrpc/train.tsv",
             "--validation", f"{DATA}/mrpc/dev.tsv", "--text-column",
             "#1 String", "--text-pair-column", "#2 String",
             "--label-column", "Quality"],
    "SST-2": ["--task", "classify", "--train", f"{DATA}/sst2/train.tsv",
              "--validation", f"{DATA}/sst2/test.tsv", "--text-column",
              "sentence", "--max-examples", "8000"],
}


def cli(*args, backend):
    env = {**os.environ, "KERAS_BACKEND": backend}
    completed = subprocess.run([sys.executable, "-m", "keras_bert.cli", *args],
                               env=env, cwd=REPO, capture_output=True,
                               text=True)
    if completed.returncode:
        raise SystemExit(f"keras-bert {args[0]} failed:\n"
                         f"{completed.stderr[-3000:]}")
    return completed.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", required=True)
    parser.add_argument("--steps", type=int, default=1600)
    parser.add_argument("--backend", default="tensorflow")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--output", required=True)
    parser.add_argument("--table", action="store_true")
    args = parser.parse_args()
    corpus = sorted(glob.glob(os.path.join(args.base, "corpus", "*.txt")))
    rows = []
    for label, extra in (("MLM + NSP", ["--nsp"]),
                         ("MLM only", ["--no-nsp"])):
        run = os.path.join(args.output, label.replace(" ", "").replace(
            "+", "_"))
        if not os.path.exists(os.path.join(run, "evaluation.json")):
            cli("pretrain", "--corpus", *corpus, "--corpus-format",
                "sentences", "--vocab", os.path.join(args.base, "vocab.txt"),
                "--steps", str(args.steps), "--output", run, *extra,
                backend=args.backend)
        with open(os.path.join(run, "evaluation.json")) as file:
            row = {"run": label, "pretraining": json.load(file)}
        for task, task_args in TASKS.items():
            out = os.path.join(run, "finetune-" + task)
            if not os.path.exists(os.path.join(out, "results.json")):
                cli("finetune", *task_args, "--model",
                    os.path.join(run, "model"), "--output", out,
                    "--epochs", str(args.epochs), "--sequence-length", "128",
                    "--learning-rate", "1e-4", backend=args.backend)
            with open(os.path.join(out, "results.json")) as file:
                row[task] = json.load(file)
        rows.append(row)
        print(json.dumps(row, default=str)[:400], flush=True)
    with open(os.path.join(args.output, "results.json"), "w") as file:
        json.dump(rows, file, indent=1, default=str)
    if args.table:
        write_section(DOC, SECTION, f"{SECTION}\n\n<!-- written by "
                      "bench/nsp_ablation.py --table -->\n\n"
                      + table(rows, args))


def _score(result):
    """Dev accuracy and F1 (percent) of the best epoch."""
    best = result["best"]
    return best["val_accuracy"], best["val_f1"]


def table(rows, args):
    lines = [
        f"Two runs of {args.steps} steps that differ only in `--nsp` or "
        f"`--no-nsp`, each fine-tuned {args.epochs} epochs (peak rate 1e-4, length 128) "
        "with `keras-bert finetune`; best dev epoch.",
        "",
        "| pretraining | held-out masked-token acc. | NSP acc. (majority) "
        "| MRPC dev acc. / F1 | SST-2 dev acc. / F1 |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        p = row["pretraining"]
        nsp = (f"{p['nsp_accuracy']:.1%} ({p['nsp_majority']:.1%})"
               if "nsp_accuracy" in p else "n/a")
        cells = []
        for task in TASKS:
            accuracy, f1 = _score(row[task])
            cells.append(f"{accuracy:.1f} / {f1:.1f}")
        lines.append(f"| {row['run']} | {p['mlm_accuracy']:.1%} | {nsp} | "
                     + " | ".join(cells) + " |")
    cells = [f"{a:.1f} / {f:.1f}" for a, f in map(_majority, TASKS.values())]
    lines.append("| always the majority label | | | " + " | ".join(cells)
                 + " |")
    return "\n".join(lines)


def _majority(task_args):
    """Dev accuracy and F1 (percent) of always predicting the majority
    label (F1 of the positive class, 0 when that label is 0)."""
    import csv

    validation = task_args[task_args.index("--validation") + 1]
    column = (task_args[task_args.index("--label-column") + 1]
              if "--label-column" in task_args else "label")
    with open(validation, encoding="utf-8-sig", newline="") as file:
        labels = [row[column] for row in csv.DictReader(
            file, delimiter="\t", quoting=csv.QUOTE_NONE)]
    positive = labels.count("1") / len(labels)
    majority = max(positive, 1 - positive)
    f1 = 2 * positive / (1 + positive) if positive >= 0.5 else 0.0
    return 100 * majority, 100 * f1


if __name__ == "__main__":
    main()
