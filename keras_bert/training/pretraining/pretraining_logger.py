import csv
import json
import os
import time

import keras

# Keras log keys -> the short names printed and written.
_COLUMNS = {
    "loss": "loss",
    "mlm_logits_loss": "mlm_loss",
    "mlm_logits_accuracy": "mlm_accuracy",
    "nsp_logits_loss": "nsp_loss",
    "nsp_logits_accuracy": "nsp_accuracy",
}


class PretrainingLogger(keras.callbacks.Callback):
    """Prints one line per logging interval and writes the metrics to disk.

    Use with `model.fit(..., steps_per_epoch=interval)`: Keras resets its
    metrics every "epoch", so each epoch's logs are the averages over that
    interval of steps. Each interval adds a row to `metrics.csv` and a
    line to `metrics.jsonl` (step, elapsed seconds, learning rate, steps/s,
    tokens/s, losses and accuracies) and the same scalars, indexed by step,
    to TensorBoard event files in `tensorboard/`. Files are appended to, so
    a resumed run continues them.

    Args:
        directory: str. Where the files go.
        total_steps: int. Steps of the whole run (for the ETA).
        tokens_per_step: int. batch size x sequence length, for tokens/s.
        tensorboard: bool. Also write TensorBoard events.
        print_fn: callable or None. Receives each line (None: silent).

    Example:
    >>> logger = PretrainingLogger("/tmp/run", total_steps=1000,
    ...                            tokens_per_step=32 * 128, print_fn=None)
    """

    def __init__(self, directory, total_steps, tokens_per_step=0,
                 tensorboard=True, print_fn=print):
        super().__init__()
        self.directory = directory
        self.total_steps = total_steps
        self.tokens_per_step = tokens_per_step
        self.tensorboard = tensorboard
        self.print_fn = print_fn
        self.rows = []

    def on_train_begin(self, logs=None):
        os.makedirs(self.directory, exist_ok=True)
        # Through NumPy: int() fails on a tf.distribute variable.
        self._step = int(keras.ops.convert_to_numpy(
            self.model.optimizer.iterations))
        self._start_step = self._interval_step = self._step
        self._start = self._interval_start = time.perf_counter()
        self._writer = None
        if self.tensorboard:
            import tensorflow as tf

            self._writer = tf.summary.create_file_writer(
                os.path.join(self.directory, "tensorboard")
            )

    def on_train_batch_end(self, batch, logs=None):
        self._step += 1

    def on_epoch_end(self, epoch, logs=None):
        now = time.perf_counter()
        steps = self._step - self._interval_step
        seconds = max(now - self._interval_start, 1e-9)
        row = {
            "step": self._step,
            "elapsed_s": round(now - self._start, 2),
            "learning_rate": float(self.model.optimizer.learning_rate),
            "steps_per_s": round(steps / seconds, 3),
            "tokens_per_s": round(steps * self.tokens_per_step / seconds, 1),
        }
        logs = dict(logs or {})
        if "nsp_logits_loss" not in logs:
            # One objective: Keras logs its loss as `loss` alone.
            logs.setdefault("mlm_logits_loss", logs.get("loss"))
        for key, name in _COLUMNS.items():
            if logs.get(key) is not None:
                row[name] = round(float(logs[key]), 5)
        self._interval_start, self._interval_step = now, self._step
        self.rows.append(row)
        self._write(row)
        if self.print_fn:
            self.print_fn(self._format(row))

    def on_train_end(self, logs=None):
        if self._writer is not None:
            self._writer.close()

    def _write(self, row):
        path = os.path.join(self.directory, "metrics.csv")
        new = not os.path.exists(path)
        with open(path, "a", newline="") as file:
            writer = csv.DictWriter(file, fieldnames=list(row))
            if new:
                writer.writeheader()
            writer.writerow(row)
        with open(os.path.join(self.directory, "metrics.jsonl"), "a") as file:
            file.write(json.dumps(row) + "\n")
        if self._writer is not None:
            import tensorflow as tf
            from tensorflow.core.framework import summary_pb2

            # What `tf.summary.scalar` writes, without needing the
            # tensorboard package at training time.
            metadata = summary_pb2.SummaryMetadata()
            metadata.plugin_data.plugin_name = "scalars"
            with self._writer.as_default(step=row["step"]):
                for name, value in row.items():
                    if name not in ("step", "elapsed_s"):
                        tf.summary.write(name, tf.constant(value, tf.float32),
                                         metadata=metadata)
            self._writer.flush()

    def _format(self, row):
        width = len(str(self.total_steps))
        parts = [f"step {row['step']:>{width}}/{self.total_steps}",
                 f"loss {row.get('loss', float('nan')):.3f}"]
        for head in ("mlm", "nsp"):
            if f"{head}_loss" in row:
                parts.append(f"{head} {row[f'{head}_loss']:.3f} "
                             f"acc {row[f'{head}_accuracy']:.3f}")
        done = row["step"] - self._start_step
        rate = done / max(row["elapsed_s"], 1e-9)
        eta = (self.total_steps - row["step"]) / max(rate, 1e-9)
        parts += [f"lr {row['learning_rate']:.1e}",
                  f"{row['steps_per_s']:.2f} steps/s",
                  f"{format_duration(row['elapsed_s'])} elapsed, {format_duration(eta)} left"]
        return " | ".join(parts)


def format_duration(seconds):
    """Seconds as "m:ss"."""
    minutes, seconds = divmod(int(round(seconds)), 60)
    return f"{minutes}:{seconds:02d}"
