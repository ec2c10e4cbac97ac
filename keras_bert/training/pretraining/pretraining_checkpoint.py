import json
import os
import re
import shutil

import keras
import numpy as np

from keras_bert.checkpoints.saving import atomic_directory
from keras_bert.checkpoints.weight_dimensions import h5_shapes
from keras_bert.training.pretraining.checkpoint_manifest import (
    checkpoint_problem)
from keras_bert.training.pretraining.checkpoint_manifest import write_manifest

_NAME = re.compile(r"^ckpt-(\d+)$")
_FILES = ("model.weights.h5", "optimizer.npz", "state.json")


class PretrainingCheckpoint(keras.callbacks.Callback):
    """Saves resumable training state every `save_every` steps.

    Each checkpoint is a folder `ckpt-{step}` holding the model weights
    (`model.weights.h5`), the optimizer's variables (`optimizer.npz`:
    moments, step counter), `state.json` (the step and `extra_state`, e.g.
    the data seed) and, written last, `manifest.json` (each file's size and
    SHA-256, `checkpoint_manifest`). The folder is written under a
    temporary name and renamed into place, so a run killed mid-save leaves
    the previous checkpoint whole. Only the newest `keep` are kept.

    `latest(directory)` is the newest checkpoint whose files match their
    manifest; a torn one (truncated, half-copied) is skipped, and listed
    with the reason in `skipped` when a list is passed. `load(model, path)`
    puts a compiled model back at a checkpoint and returns its state;
    `restore(model, directory)` does both.

    Args:
        directory: str. Folder for the checkpoints.
        save_every: int. Save when the global step is a multiple of this;
            the last step of a run is always saved.
        keep: int. Number of checkpoints to keep.
        extra_state: dict or None. JSON data stored in every `state.json`.

    Example:
    >>> callback = PretrainingCheckpoint("/tmp/run/checkpoints", 500)
    >>> # model.fit(..., callbacks=[callback]); later, to resume:
    >>> # state = PretrainingCheckpoint.restore(model, "/tmp/run/checkpoints")
    """

    def __init__(self, directory, save_every, keep=2, extra_state=None):
        super().__init__()
        if save_every < 1 or keep < 1:
            raise ValueError(
                f"save_every and keep must be >= 1; got {save_every}, {keep}."
            )
        self.directory = directory
        self.save_every = save_every
        self.keep = keep
        self.extra_state = dict(extra_state or {})
        self._step = None

    def on_train_begin(self, logs=None):
        # Through NumPy: int() fails on a tf.distribute variable.
        self._step = int(keras.ops.convert_to_numpy(
            self.model.optimizer.iterations))
        self._saved_step = self._step

    def on_train_batch_end(self, batch, logs=None):
        # Counted here: reading the optimizer step every batch would force
        # the JAX trainer to sync its state to the variables each time.
        self._step += 1
        if self._step % self.save_every == 0:
            self.save(self._step)

    def on_train_end(self, logs=None):
        if self._step != self._saved_step:
            self.save(self._step)

    def save(self, step):
        """Writes `ckpt-{step}`, its manifest last."""
        model = self.model
        name = f"ckpt-{step:08d}"
        target = os.path.join(self.directory, name)
        # A folder of this step left by a run resumed from an earlier one
        # (it was torn, or its run went on from there): replaced.
        shutil.rmtree(target, ignore_errors=True)
        with atomic_directory(target) as staging:
            model.save_weights(os.path.join(staging, "model.weights.h5"))
            store = {}
            model.optimizer.save_own_variables(store)
            np.savez(os.path.join(staging, "optimizer.npz"), **store)
            with open(os.path.join(staging, "state.json"), "w") as file:
                json.dump({"step": step, **self.extra_state}, file, indent=2)
            write_manifest(staging, _FILES)
        self._saved_step = step
        for old in _checkpoint_names(self.directory)[: -self.keep]:
            shutil.rmtree(os.path.join(self.directory, old), ignore_errors=True)

    @staticmethod
    def latest(directory, skipped=None):
        """The newest intact checkpoint folder in `directory`, or None.

        Args:
            directory: str. The checkpoints folder.
            skipped: list or None. Gets `(folder, reason)` for each newer
                checkpoint that is torn (a file missing, truncated or not
                matching the manifest).
        """
        names = _checkpoint_names(directory) if os.path.isdir(directory) else []
        for name in reversed(names):
            path = os.path.join(directory, name)
            problem = checkpoint_problem(path, _FILES)
            if problem is None:
                return path
            if skipped is not None:
                skipped.append((path, problem))
        return None

    @staticmethod
    def load(model, path):
        """Loads the checkpoint folder `path` into a compiled `model`.

        Returns:
            The checkpoint's state dict (with "step").
        """
        optimizer = model.optimizer
        # Built first: the weights file also holds the optimizer's
        # variables, which Keras skips (with a warning) on an unbuilt one.
        optimizer.build(model.trainable_variables)
        with np.load(os.path.join(path, "optimizer.npz")) as saved:
            store = {key: saved[key] for key in saved.files}
        if len(store) != len(optimizer.variables):
            raise ValueError(
                f"{path}/optimizer.npz holds {len(store)} optimizer "
                f"variables but the model's {type(optimizer).__name__} has "
                f"{len(optimizer.variables)}: the checkpoint was written "
                "with a different optimizer or model. Use the same "
                "--config and optimizer (in code: `create_optimizer(..., "
                "resizable_schedule=True)`, as `keras-bert pretrain` "
                "makes it), or start a new output directory."
            )
        weights = os.path.join(path, "model.weights.h5")
        h5_shapes(weights)  # no dataset keeping its data in another file
        model.load_weights(weights)
        optimizer.load_own_variables(store)
        with open(os.path.join(path, "state.json")) as file:
            return json.load(file)

    @staticmethod
    def restore(model, directory, skipped=None):
        """Loads the newest intact checkpoint into a compiled `model`.

        Returns:
            The checkpoint's state dict (with "step"), or None when
            `directory` holds no intact checkpoint (`skipped` as in
            `latest`).
        """
        path = PretrainingCheckpoint.latest(directory, skipped)
        return None if path is None else PretrainingCheckpoint.load(model,
                                                                    path)


def _checkpoint_names(directory):
    names = [n for n in os.listdir(directory) if _NAME.match(n)]
    return sorted(names, key=lambda n: int(_NAME.match(n).group(1)))
