import time

import keras
import numpy as np
from keras import ops


class StepBudget:
    """Turns a wall-clock budget into a number of training steps.

    A run with a time budget cannot size its learning-rate schedule before
    it knows how fast it trains on this machine. `measure_step_rate` times
    a few real steps of `fit` (after the first ones: compiling, filling
    the input pipeline) and puts the model's and its optimizer's variables
    back, so the run then starts from the same state as a run given its
    number of steps; `steps` spends what is left of the budget, keeping
    back a share for the evaluation and the saved model.

    Args:
        seconds: float. The whole run's budget.
        started: float. `time.perf_counter()` when the run began.
        reserve_seconds: float. Kept back for evaluating and saving.
        reserve_fraction: float. Also kept back: this share of `seconds`
            (the run's steps cost a little more than the timed ones: its
            logging and checkpoints; a shared machine's noise).
        group_steps: int. Steps per timed group (one `fit` epoch); the
            first group, which compiles, is not timed.
        timed_groups: int. Groups timed after it (the median counts: a
            short measurement on a shared machine is noisy).

    Example:
    >>> import time
    >>> budget = StepBudget(300, started=time.perf_counter())
    >>> budget.steps(rate=5.0) > 1000
    True
    """

    def __init__(self, seconds, started, reserve_seconds=15.0,
                 reserve_fraction=0.04, group_steps=5, timed_groups=5):
        self.seconds = seconds
        self.started = started
        self.reserve_seconds = reserve_seconds
        self.reserve_fraction = reserve_fraction
        self.group_steps = group_steps
        self.timed_groups = timed_groups

    def remaining(self):
        """Seconds left for training steps."""
        spent = time.perf_counter() - self.started
        reserve = self.reserve_seconds + self.reserve_fraction * self.seconds
        return self.seconds - spent - reserve

    def steps(self, rate):
        """Training steps that fit in what is left at `rate` steps/s."""
        left = self.remaining()
        if left <= 0:
            raise ValueError(
                f"The time budget of {self.seconds / 60:g} min is spent "
                "before training starts (corpus and vocabulary took "
                f"{time.perf_counter() - self.started:.0f} s). Give more "
                "minutes, or a number of steps.")
        return max(1, int(left * rate))

    def measure_step_rate(self, model, batches):
        """Steps/s of `model.fit` on `batches` (a tf.data dataset), the
        way the run trains (`train_on_batch` converts and waits for each
        batch: slower, most on a tiny model). The model's variables
        (weights, random-seed states) and its optimizer's are restored
        afterwards; the compiled train step is kept for the run."""
        model.optimizer.build(model.trainable_variables)
        variables = model.variables + model.optimizer.variables
        saved = [ops.convert_to_numpy(v) for v in variables]
        clock = _EpochClock()
        model.fit(batches, steps_per_epoch=self.group_steps,
                  epochs=1 + self.timed_groups, verbose=0, callbacks=[clock])
        for variable, value in zip(variables, saved):
            variable.assign(value)
        # The median group: one slow group (a pipeline refill) is not the
        # rate. The first group, which compiled, is not timed.
        step = float(np.median(np.diff(clock.ends))) / self.group_steps
        return 1.0 / step


class _EpochClock(keras.callbacks.Callback):
    """Records when each epoch ends."""

    def __init__(self):
        super().__init__()
        self.ends = []

    def on_epoch_end(self, epoch, logs=None):
        self.ends.append(time.perf_counter())
