"""XLA on TensorFlow's CPUs: what keras_bert's `jit_compile="auto"` buys.

Keras leaves XLA off for TensorFlow on a machine without an accelerator;
keras_bert's models turn it on (keras_bert/models/xla_default.py). This
times the same TensorFlow model compiled both ways, interleaved round
after round in one worker process:

* pretraining step: the default `keras-bert pretrain` step (BERT tiny,
  vocabulary 8,000, 32 x 64, masked LM only at 19 positions, dropout 0);
* fine-tuning step: `bench_training_step`'s classifier step (BERT mini
  at 32 x 128, the classifier's own `compile`, dropout 0.1);
* forward: all-MiniLM-L6-v2 at 8 x 128 (`predict_on_batch`).

Each step is one `train_on_batch` of one synthetic batch. "ready" is the
time to build, compile and call each model twice: what XLA costs once.

    python -m bench.bench_xla_default --rounds 5 --calls 5 --write-docs
"""

import argparse
import re

from bench import common
from bench.bench_training_step import keras_step
from bench.bench_training_step import synthetic_batch
from bench.keras_runtime import KerasRuntime

CASES = ("pretraining step", "fine-tuning step", "forward")
SECTION = "### XLA on TensorFlow"
DOC = "docs/performance.md"


def prepare(case):
    import keras_bert

    jit = case["jit_compile"]
    if case["name"] == "forward":
        return KerasRuntime().forward({
            "library": "keras_bert", "variant": "" if jit else "noxla",
            "dtype": "float32", "batch": 8, "length": 128})
    if case["name"] == "fine-tuning step":
        return keras_step({"task": "classifier", "batch": 32, "length": 128,
                           "jit_compile": jit})
    backbone = keras_bert.BertBackbone.from_preset(
        "bert_tiny_uncased_config", vocabulary_size=8000, dropout=0.0)
    model = keras_bert.BertPretrainer(backbone, next_sentence_prediction=False)
    model.compile(total_steps=1000, learning_rate=1e-3, jit_compile=jit)
    data = synthetic_batch(32, 64, 8000, num_masks=19)
    inputs = {key: data[key] for key in ("token_ids", "segment_ids",
                                         "padding_mask", "mask_positions")}
    return lambda: model.train_on_batch(inputs,
                                        {"mlm_logits": data["mask_ids"]})


def table(summary, machine, args):
    lines = [
        f"`python -m bench.bench_xla_default --rounds {args.rounds} --calls "
        f"{args.calls}`: TensorFlow, float32, one worker process, the two "
        "compilations of each case timed interleaved; medians. CPU: "
        f"{machine['cpu']}, {machine['cores']} cores, flags "
        f"{' '.join(machine['isa'])}; load {machine['load_average_at_start']}"
        " at the start.",
        "",
        "| case | no XLA (Keras' default on CPUs) | XLA (keras_bert's default) "
        "| speed-up | ready: no XLA / XLA |",
        "|---|---|---|---|---|",
    ]
    for name in CASES:
        row = summary[name]
        lines.append(
            f"| {name} | {row['off_ms']:.1f} ms | {row['on_ms']:.1f} ms | "
            f"**{row['speedup']:.2f}x** | {row['off_ready_s']:.1f} s / "
            f"{row['on_ready_s']:.1f} s |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--output")
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    if args.worker:
        return common.serve(prepare)

    machine = common.machine_info()
    groups = {name: [(label, "keras-tensorflow",
                      {"name": name, "jit_compile": jit})
                     for label, jit in (("off", False), ("on", True))]
              for name in CASES}
    ready = {}

    def log(line):
        print(line, flush=True)
        found = re.match(r"  (.+) (on|off): ready in ([\d.]+)s", line)
        if found:
            ready[found.group(1), found.group(2)] = float(found.group(3))

    results = common.run_workers("bench.bench_xla_default", groups,
                                 args.rounds, args.calls, log=log)
    summary = {
        name: {"off_ms": 1e3 * common.median_time(entries["off"]),
               "on_ms": 1e3 * common.median_time(entries["on"]),
               "speedup": common.paired_speedup(entries["on"],
                                                entries["off"]),
               "off_ready_s": ready[name, "off"],
               "on_ready_s": ready[name, "on"]}
        for name, entries in results.items()
    }
    text = table(summary, machine, args)
    print(text)
    if args.output:
        common.write_json(args.output, {"machine": machine, "args": vars(args),
                                        "summary": summary, "raw": results})
    if args.write_docs:
        common.write_section(
            f"{common.REPO_ROOT}/{DOC}", SECTION, f"{SECTION}\n\n<!-- written "
            "by bench/bench_xla_default.py --write-docs -->\n\n" + text)


if __name__ == "__main__":
    main()
