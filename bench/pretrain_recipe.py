"""Pretraining recipe ablations: held-out quality of `keras-bert pretrain`
variants, each differing from a base in one setting.

Every variant is one `keras-bert pretrain` run in its own process, on the
built-in corpus with one shared vocabulary (so vocabulary learning is not
timed, except in the `vocab` group), the same seed and the same held-out
evaluation. Groups that keep the model and batch shape fixed compare at
equal steps (equal compute); groups that change the cost of a step
(`shape`, `vocab`, `batch`, `length`) compare at an equal time budget
(`--minutes`), so run those on an otherwise idle machine. Each finished
run appends a line to OUTPUT/results.jsonl (settings, held-out results,
steps, training time, load average); `--table` renders every line into
the "Recipe ablations" section of docs/pretraining.md.

    python -m bench.pretrain_recipe --base /tmp/runs/base --group lr \\
        --output /tmp/ablations
    python -m bench.pretrain_recipe --output /tmp/ablations --table

`--base DIR` is a finished or started `keras-bert pretrain` run directory
whose corpus/ and vocab.txt the variants reuse.
"""

import argparse
import glob
import json
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(REPO, "docs", "pretraining.md")
SECTION = "### Recipe ablations"

# Equal compute: the tiny model, 64 x 128 tokens a step.
STEPS = ["--steps", "400"]
GROUPS = {
    "lr": [(f"peak rate {lr}", STEPS + ["--learning-rate", lr])
           for lr in ("5e-4", "1e-3", "2e-3", "4e-3")],
    "warmup": [(f"warmup {w:.0%}", STEPS + ["--warmup-fraction", str(w)])
               for w in (0.01, 0.06, 0.15)],
    "dropout": [(f"dropout {d}", STEPS + ["--dropout", d])
                for d in ("0", "0.1")],
    "mask": [(f"mask rate {m}", STEPS + ["--mask-rate", m])
             for m in ("0.15", "0.25", "0.4")],
    "nsp": [("MLM + NSP", STEPS), ("MLM only", STEPS + ["--no-nsp"])],
    "recipe": [("budget recipe", STEPS),
               ("bert recipe", STEPS + ["--recipe", "bert"])],
    # Equal time: these change what a step costs.
    "length": [(f"length {n}", ["--minutes", "4", "--sequence-length", n])
               for n in ("64", "128", "256")],
    "batch": [(f"batch {b}", ["--minutes", "4", "--batch-size", b])
              for b in ("32", "64", "128")],
    "shape": [(name, ["--minutes", "4", "--config", config])
              for name, config in (
                  ("tiny: 2 x 128", "tiny"),
                  ("4 x 128", '{"num_layers": 4, "num_heads": 2, '
                              '"hidden_dim": 128, "intermediate_dim": 512}'),
                  ("mini: 4 x 256", "mini"))],
    "vocab": [(f"vocabulary {v}", ["--minutes", "4", "--vocab-size", v])
              for v in ("2000", "4000", "8000", "16000")],
}


def run_variant(base, output, group, label, extra, backend):
    run_dir = os.path.join(output, "runs", f"{group}-{len(os.listdir(os.path.join(output, 'runs')))}")
    corpus = sorted(glob.glob(os.path.join(base, "corpus", "*.txt")))
    args = [sys.executable, "-m", "keras_bert.cli", "pretrain",
            "--corpus", *corpus, "--corpus-format", "sentences",
            "--output", run_dir]
    if "--vocab-size" not in extra:
        args += ["--vocab", os.path.join(base, "vocab.txt")]
    args += extra
    env = {**os.environ, "KERAS_BACKEND": backend}
    load = os.getloadavg()[0]
    start = time.perf_counter()
    completed = subprocess.run(args, env=env, capture_output=True, text=True,
                               cwd=REPO)
    wall = time.perf_counter() - start
    if completed.returncode:
        print(completed.stdout[-2000:], completed.stderr[-4000:])
        raise SystemExit(f"{label}: pretrain failed ({completed.returncode})")
    with open(os.path.join(run_dir, "evaluation.json")) as file:
        evaluation = json.load(file)
    with open(os.path.join(run_dir, "run.json")) as file:
        settings = json.load(file)
    evaluation.pop("fill_mask_examples", None)
    return {"group": group, "label": label, "args": extra,
            "backend": backend, "settings": settings,
            "evaluation": evaluation, "wall_s": wall,
            "load_before": load, "load_after": os.getloadavg()[0],
            "fill_mask_top5": _fill_mask_hits(run_dir)}


def _fill_mask_hits(run_dir):
    with open(os.path.join(run_dir, "evaluation.json")) as file:
        examples = json.load(file).get("fill_mask_examples", [])
    return sum(1 for example in examples if example.get("rank"))


def table(rows):
    lines = [
        "| group | variant | steps | held-out masked-token acc. (x unigram)"
        " | MLM loss vs unigram | NSP acc. (majority) | fill-mask top 5 |"
        " train s | load |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        e = row["evaluation"]
        nsp = (f"{e['nsp_accuracy']:.1%} ({e['nsp_majority']:.1%})"
               if "nsp_accuracy" in e else "n/a")
        lines.append(
            f"| {row['group']} | {row['label']} | {row['settings']['steps']:,}"
            f" | {e['mlm_accuracy']:.1%} ({e['mlm_accuracy'] / e['unigram_accuracy']:.2f}x)"
            f" | {e['mlm_loss']:.3f} vs {e['unigram_loss']:.3f} | {nsp}"
            f" | {row['fill_mask_top5']}/5 | {e['timings']['train_s']:.0f}"
            f" | {row['load_before']:.1f} |")
    return "\n".join(lines)


def write_section(text):
    with open(DOC) as file:
        doc = file.read()
    start = doc.index(SECTION)
    end = doc.find("\n#", start + len(SECTION))
    end = len(doc) if end < 0 else end
    body = (f"{SECTION}\n\n<!-- written by bench/pretrain_recipe.py "
            f"--table -->\n\n{text}\n")
    with open(DOC, "w") as file:
        file.write(doc[:start] + body + doc[end:])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", help="a pretrain run directory")
    parser.add_argument("--group", nargs="*", choices=sorted(GROUPS),
                        default=[])
    parser.add_argument("--backend", default="tensorflow")
    parser.add_argument("--output", required=True)
    parser.add_argument("--table", action="store_true",
                        help="render OUTPUT/results.jsonl into the docs")
    args = parser.parse_args()
    os.makedirs(os.path.join(args.output, "runs"), exist_ok=True)
    results = os.path.join(args.output, "results.jsonl")
    for group in args.group:
        for label, extra in GROUPS[group]:
            row = run_variant(args.base, args.output, group, label, extra,
                              args.backend)
            with open(results, "a") as file:
                file.write(json.dumps(row) + "\n")
            print(table([row]).splitlines()[-1], flush=True)
    if args.table:
        with open(results) as file:
            rows = [json.loads(line) for line in file]
        write_section(table(rows))


if __name__ == "__main__":
    main()
