"""The callback `keras-bert finetune` scores and saves each epoch with."""

import csv
import json
import math
import os

import keras


class EpochScores(keras.callbacks.Callback):
    """Scores the validation file after each epoch and logs it as `val_*`
    (so the progress bar and History, which run after it, show it), saves
    the model when the monitored score is the best so far (on a tie, when
    the validation loss is lower: small validation sets tie often), and
    rewrites the metrics files."""

    def __init__(self, evaluate, monitor, save, output_dir):
        super().__init__()
        self.evaluate, self.monitor, self.save = evaluate, monitor, save
        self.output_dir = output_dir
        self.rows, self.best = [], None

    def on_epoch_end(self, epoch, logs=None):
        logs = {} if logs is None else logs
        scores = self.evaluate()
        logs.update({f"val_{k}": float(v) for k, v in scores.items()
                     if k != "count" and not k.startswith("num_")})
        row = {"epoch": epoch + 1, **{k: float(v) for k, v in logs.items()}}
        self.rows.append(row)
        if self._improves(row):
            self.best = row
            if self.output_dir:
                self.save(row)
        if self.output_dir:
            write_metrics(self.rows, self.output_dir)

    def _improves(self, row):
        if self.best is None:
            return True
        key = f"val_{self.monitor}"
        if row[key] != self.best[key]:
            return row[key] > self.best[key]
        return (row.get("val_loss", math.inf)
                < self.best.get("val_loss", math.inf))


def write_metrics(rows, output_dir):
    """metrics.jsonl and metrics.csv: one row per epoch."""
    with open(os.path.join(output_dir, "metrics.jsonl"), "w") as handle:
        handle.writelines(json.dumps(row) + "\n" for row in rows)
    names = list(dict.fromkeys(key for row in rows for key in row))
    with open(os.path.join(output_dir, "metrics.csv"), "w",
              newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=names)
        writer.writeheader()
        writer.writerows(rows)
