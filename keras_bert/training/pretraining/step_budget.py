import time

import numpy as np
from keras import ops


class StepBudget:
    """Turns a wall-clock budget into a number of training steps.

    A run with a time budget cannot size its learning-rate schedule before
    it knows how fast it trains on this machine. `measure_step_rate` times
    a few real steps (after the first ones: compiling, filling the input
    pipeline) and puts the
    model's variables back, so the run then starts from the same weights
    as a run given its number of steps; `steps` spends what is left of the
    budget, keeping back a share for the evaluation and the saved model.

    Args:
        seconds: float. The whole run's budget.
        started: float. `time.perf_counter()` when the run began.
        reserve_seconds: float. Kept back for evaluating and saving.
        reserve_fraction: float. Also kept back: this share of `seconds`
            (steps in `fit` cost a little more than timed steps: logging,
            checkpoints).
        warmup_steps: int. Untimed steps after the compiling one.
        timed_steps: int. Steps timed after those (the median counts: a
            short measurement on a shared machine is noisy).

    Example:
    >>> import time
    >>> budget = StepBudget(300, started=time.perf_counter())
    >>> budget.steps(rate=5.0) > 1000
    True
    """

    def __init__(self, seconds, started, reserve_seconds=15.0,
                 reserve_fraction=0.08, warmup_steps=2, timed_steps=20):
        self.seconds = seconds
        self.started = started
        self.reserve_seconds = reserve_seconds
        self.reserve_fraction = reserve_fraction
        self.warmup_steps = warmup_steps
        self.timed_steps = timed_steps
        # The run's `fit` traces its train function again and refills the
        # input pipeline: as long as the first measured step took.
        self.startup_seconds = 0.0

    def remaining(self):
        """Seconds left for training steps."""
        spent = time.perf_counter() - self.started
        reserve = (self.reserve_seconds + self.reserve_fraction * self.seconds
                   + self.startup_seconds)
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
        """Steps/s of `model.train_on_batch` on `batches` (a tf.data
        dataset); the model's variables (weights, random-seed states) are
        restored afterwards."""
        saved = [ops.convert_to_numpy(v) for v in model.variables]
        # train_on_batch takes arrays, not tf tensors, on JAX and torch
        # (fit converts them in its data adapter).
        iterator = batches.as_numpy_iterator()
        start = time.perf_counter()
        model.train_on_batch(*next(iterator))  # compiles
        self.startup_seconds = time.perf_counter() - start
        for _ in range(self.warmup_steps):
            model.train_on_batch(*next(iterator))
        times = []
        for _ in range(self.timed_steps):
            start = time.perf_counter()
            model.train_on_batch(*next(iterator))  # the pipeline counts
            times.append(time.perf_counter() - start)
        for variable, value in zip(model.variables, saved):
            variable.assign(value)
        # The median step: one slow step (a pipeline refill) is not the rate.
        return 1.0 / float(np.median(times))
