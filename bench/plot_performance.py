"""Bar chart of the measured speed ratios, from the benchmarks' JSON files.

Reads whichever of the results files exist (written with `--output` by
`bench_inference.py`, `bench_sst2.py`, `bench_training_step.py` and
`bench_tokenizer.py`) and draws one bar per ratio, grouped by benchmark,
with the goal of each group as a dashed line. Nothing is computed here
beyond reading the ratios the scripts measured (paired, interleaved
medians); a file that is missing is left out of the chart.

    python -m bench.plot_performance --results /tmp/bench_results \
        --output docs/images/performance_ratios.png
"""

import argparse
import json
import os


def _load(directory, name):
    path = os.path.join(directory, name)
    if not os.path.isfile(path):
        return None
    with open(path) as f:
        return json.load(f)


def _in_run_order(inference):
    """Summary groups in the order of the run's --dtypes and --shapes (the
    JSON file keeps them sorted as text: 32x128 before 8x128)."""
    args = inference.get("args", {})
    dtypes = args.get("dtypes", "").split(",")
    shapes = args.get("shapes", "").split(",")

    def rank(group):
        dtype, shape = group.split("@")
        return (dtypes.index(dtype) if dtype in dtypes else len(dtypes),
                shapes.index(shape) if shape in shapes else len(shapes))

    return sorted(inference["summary"].items(), key=lambda kv: rank(kv[0]))


def collect(directory):
    """[(group title, goal or None, [(label, ratio), ...]), ...]."""
    groups = []
    # inference.json: the float32 run over every backend; inference_bf16.json
    # (optional): a float32 + bfloat16 run, whose float32 group is left out
    # when inference.json already has one; inference_1thread.json
    # (optional): the same as inference.json with `--threads 1`.
    seen = set()
    for name, suffix in (("inference.json", ""), ("inference_bf16.json", ""),
                         ("inference_1thread.json", ", 1 thread")):
        inference = _load(directory, name)
        if not inference:
            continue
        for group, info in _in_run_order(inference):
            group += suffix
            if group in seen:
                continue
            seen.add(group)
            bars = []
            for label, row in info["rows"].items():
                # "+fused" is the earlier attention, a baseline, not a result.
                if label.startswith("keras_bert/") and "+fused" not in label:
                    if row.get("speedup_vs_transformers") is not None:
                        bars.append((f"{label}\nvs transformers",
                                     row["speedup_vs_transformers"]))
                    if row.get("speedup_vs_keras_hub") is not None:
                        bars.append((f"{label}\nvs keras-hub",
                                     row["speedup_vs_keras_hub"]))
            if bars:
                goal = 1.2 if group.startswith("float32") else 2.0
                groups.append((f"forward {group}", goal, bars))
        bf16 = [(key.replace(" ", "\n"), value)
                for key, value in inference.get("bf16_vs_fp32", {}).items()
                if key.startswith("keras_bert/") and "+fused" not in key
                and value is not None]
        if bf16:
            groups.append(("bfloat16 vs own float32", 4.0, bf16))
    sst2 = _load(directory, "sst2.json")
    if sst2:
        for group, rows in sst2["summary"].items():
            bars = [(label.replace(" ", "\n"), row["speedup_vs_fixed"])
                    for label, row in rows.items()
                    if row.get("speedup_vs_fixed") is not None]
            if bars:
                groups.append((f"{group}: vs fixed 128", 2.0, bars))
    for name in ("training.json", "training_classifier.json"):
        training = _load(directory, name)
        if not training:
            continue
        for group, rows in training["summary"].items():
            bars = [(label, row["speedup_vs_transformers"])
                    for label, row in rows.items()
                    if label.startswith("keras_bert/")
                    and row.get("speedup_vs_transformers") is not None]
            if bars:
                groups.append((f"training {group}: vs transformers", 1.0,
                               bars))
    tokenizer = _load(directory, "tokenizer.json")
    if tokenizer:
        bars = [(f"batch {row['batch_size']}", row["ratio"])
                for row in tokenizer["rows"]]
        groups.append(("tokenizer vs BertTokenizerFast", 1.0, bars))
    return groups


def plot(groups, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # Rows of at most 3 panels: the docs page shows the image at text
    # width, where 5 panels a row were too small to read.
    ncols = min(3, len(groups))
    nrows = -(-len(groups) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.4 * ncols, 4.6 * nrows),
                             squeeze=False)
    for ax in axes.flat[len(groups):]:
        ax.set_visible(False)
    for ax, (title, goal, bars) in zip(axes.flat, groups):
        labels = [label for label, _ in bars]
        values = [value for _, value in bars]
        # keras_bert vs keras-hub has its own goal (1.3x) in the float32
        # forward group and none in the bfloat16 one (grey bars).
        goals = [(1.3 if goal == 1.2 else None) if "keras-hub" in label
                 else goal for label in labels]
        colors = ["tab:gray" if g is None else
                  "tab:green" if v >= g else "tab:red"
                  for v, g in zip(values, goals)]
        ax.bar(range(len(values)), values, color=colors)
        for x, v in enumerate(values):
            ax.text(x, v, f"{v:.2f}", ha="center", va="bottom", fontsize=7)
        ax.axhline(1.0, color="black", linewidth=0.8)
        # One dash per bar: bars in one panel can have different goals
        # (1.2x transformers, 1.3x keras-hub).
        for x, g in enumerate(goals):
            if g is not None and g != 1.0:
                ax.hlines(g, x - 0.45, x + 0.45, color="black",
                          linestyle="--", linewidth=0.9)
        ax.set_xticks(range(len(values)))
        ax.set_xticklabels(labels, rotation=70, fontsize=6.5, ha="right")
        ax.set_title(title, fontsize=8)
        ax.tick_params(axis="y", labelsize=7)
    for row in axes:
        row[0].set_ylabel("ratio (x, above 1: keras_bert faster)",
                          fontsize=7)
    fig.suptitle("keras_bert speed ratios, paired interleaved medians, 2-core "
                 "shared CPU (green: goal met, red: not met, grey: no goal, "
                 "dashed: each bar's goal)",
                 fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--results", default="/tmp/bench_results")
    parser.add_argument("--output",
                        default="docs/images/performance_ratios.png")
    args = parser.parse_args()
    groups = collect(args.results)
    if not groups:
        parser.error(f"no results files in {args.results}")
    plot(groups, args.output)
    for title, goal, bars in groups:
        print(title, f"(goal {goal})")
        for label, value in bars:
            print(f"  {label.replace(chr(10), ' ')}: {value:.2f}")


if __name__ == "__main__":
    main()
