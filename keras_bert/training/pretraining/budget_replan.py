import math
import time

import keras


class BudgetReplan(keras.callbacks.Callback):
    """Re-sizes a budget run from the speed of its own training steps.

    A budget run fixes its steps from a few timed steps before it starts
    (`StepBudget.measure_step_rate`); on a shared machine those can be 20%
    off the rate the run then trains at, which ends the run early (time
    unused) or late (past its budget). This callback times the run's own
    logged intervals and, at `checkpoints` (shares of the planned
    intervals, at least two intervals in), plans again: the steps done
    plus what `budget` has left at the measured rate, in whole intervals,
    at most `max_steps`. A changed plan goes to `on_replan(steps, rate)`,
    which resizes the learning-rate schedule (a variable of the compiled
    step) and records the new length. The callback stops `fit` at the end of
    the planned steps, so `fit` is given `max_steps`.

    Args:
        budget: the run's `StepBudget`.
        steps: int. The planned steps (a multiple of `log_every`).
        log_every: int. Steps per `fit` epoch (one logged interval).
        max_steps: int. `fit`'s length: the plan never grows past it.
        on_replan: callable taking the new number of steps and the
            measured rate (steps/s).
        checkpoints: tuple of floats. When to plan again, as shares of
            the first plan's intervals.

    Example:
    >>> import time
    >>> from keras_bert.training.pretraining.step_budget import StepBudget
    >>> budget = StepBudget(300, started=time.perf_counter())
    >>> replan = BudgetReplan(budget, steps=1000, log_every=50,
    ...                       max_steps=2000, on_replan=print)
    >>> replan.replan_epochs
    [3, 9]
    """

    def __init__(self, budget, steps, log_every, max_steps, on_replan,
                 checkpoints=(0.2, 0.5)):
        super().__init__()
        self.budget = budget
        self.steps = steps
        self.log_every = log_every
        self.max_steps = max_steps
        self.on_replan = on_replan
        intervals = steps // log_every
        # Epoch indices; the first epoch starts `fit` and is not timed, so
        # the earliest plan times two intervals after it.
        self.replan_epochs = sorted({max(2, math.ceil(share * intervals) - 1)
                                     for share in checkpoints})
        self._timed_from = None

    def on_epoch_end(self, epoch, logs=None):
        now = time.perf_counter()
        if self._timed_from is None:
            self._timed_from = (epoch, now)
        elif epoch in self.replan_epochs:
            first, start = self._timed_from
            rate = (epoch - first) * self.log_every / max(now - start, 1e-9)
            self._replan((epoch + 1) * self.log_every, rate)
        if (epoch + 1) * self.log_every >= self.steps:
            self.model.stop_training = True

    def _replan(self, done, rate):
        left = max(0, int(self.budget.remaining() * rate))
        steps = done + self.log_every * math.ceil(left / self.log_every)
        steps = min(steps, self.max_steps)
        if steps != self.steps:
            self.steps = steps
            self.on_replan(steps, rate)
