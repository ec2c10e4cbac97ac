"""Plots the loss and metric curves of a run from its metrics rows."""

import json


def read_metrics(path):
    """Reads the rows of a `metrics.jsonl` written by `PretrainingLogger`."""
    with open(path) as file:
        return [json.loads(line) for line in file if line.strip()]


def plot_loss_curves(rows, path, title="BERT pretraining", baselines=None):
    """Draws the MLM and NSP losses and accuracies against the step.

    Needs matplotlib (`pip install matplotlib`); returns False without
    drawing when it is missing, True once `path` is written.

    Args:
        rows: list of dicts with "step" and the metric names (the rows of
            `metrics.jsonl`).
        path: str. Output image (.png).
        title: str. Figure title.
        baselines: dict or None. Horizontal reference lines, e.g.
            `{"mlm_loss": 6.1, "mlm_accuracy": 0.05, "nsp_accuracy": 0.5}`
            for the unigram and chance levels.
    """
    plt = _pyplot()
    if plt is None:
        return False
    baselines = baselines or {}
    steps = [row["step"] for row in rows]
    figure, (losses, accuracies) = plt.subplots(1, 2, figsize=(11, 4))
    for name, color in (("mlm", "tab:blue"), ("nsp", "tab:orange")):
        for axis, metric in ((losses, "loss"), (accuracies, "accuracy")):
            key = f"{name}_{metric}"
            if not any(key in row for row in rows):
                continue
            axis.plot(steps, [row.get(key) for row in rows], color=color,
                      label=f"{name.upper()} {metric} (train)")
            if key in baselines:
                axis.axhline(baselines[key], color=color, linestyle="--",
                             label=f"{name.upper()} {_baseline_name(name)}")
    losses.set_ylabel("cross-entropy (nats)")
    accuracies.set_ylabel("accuracy")
    _finish(plt, figure, (losses, accuracies), "step", title, path)
    return True


def plot_finetuning_curves(rows, path, title="BERT fine-tuning"):
    """Draws the losses (left) and validation scores (right) per epoch.

    Needs matplotlib; returns False without drawing when it is missing.

    Args:
        rows: list of dicts with "epoch", "loss" and optionally "val_loss"
            and `val_*` scores (percentages), one per epoch.
        path: str. Output image (.png).
        title: str. Figure title.
    """
    plt = _pyplot()
    if plt is None:
        return False
    epochs = [row["epoch"] for row in rows]
    figure, (losses, scores) = plt.subplots(1, 2, figsize=(11, 4))
    for key, label in (("loss", "train loss"),
                       ("val_loss", "validation loss")):
        if key in rows[-1]:
            losses.plot(epochs, [row.get(key) for row in rows], marker="o",
                        label=label)
    for key in rows[-1]:
        if key.startswith("val_") and key not in ("val_loss", "val_mse"):
            scores.plot(epochs, [row.get(key) for row in rows], marker="o",
                        label=key[len("val_"):].replace("_", " "))
    losses.set_ylabel("loss")
    scores.set_ylabel("validation score (%)")
    for axis in (losses, scores):
        axis.xaxis.get_major_locator().set_params(integer=True)
    _finish(plt, figure, (losses, scores), "epoch", title, path)
    return True


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only: no display on servers
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def _finish(plt, figure, axes, xlabel, title, path):
    for axis in axes:
        axis.set_xlabel(xlabel)
        axis.grid(alpha=0.3)
        # A panel of unlabelled lines (e.g. no NSP curves) gets no legend.
        if axis.get_legend_handles_labels()[0]:
            axis.legend(fontsize=8)
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _baseline_name(head):
    return "unigram baseline" if head == "mlm" else "chance"
