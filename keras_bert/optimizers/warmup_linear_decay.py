import weakref

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """BERT's learning rate: linear warmup to a peak, then linear decay.

    The rate rises from 0 to `peak_learning_rate` over `warmup_steps`, then
    falls linearly to `end_learning_rate` at `total_steps` and stays there.
    The paper uses a peak of 1e-4, 10,000 warmup steps and 1,000,000 steps.

    A run that learns its length only after its train step is compiled
    (a time budget) calls `track_in(optimizer)` before compiling and
    `resize` once the length is known: the lengths then live in optimizer
    variables that the compiled step reads, so nothing compiles again.

    Args:
        peak_learning_rate: float. The rate at the end of warmup.
        total_steps: int. Step at which the decay reaches its end.
        warmup_steps: int. Length of the warmup (0 for none).
        end_learning_rate: float. The rate at and after `total_steps`.

    Example:
    >>> schedule = WarmupLinearDecay(1e-3, total_steps=100, warmup_steps=10)
    >>> [round(float(schedule(s)), 6) for s in (0, 5, 10, 55, 100, 200)]
    [0.0, 0.0005, 0.001, 0.0005, 0.0, 0.0]
    """

    def __init__(
        self,
        peak_learning_rate,
        total_steps,
        warmup_steps=0,
        end_learning_rate=0.0,
    ):
        _check_lengths(total_steps, warmup_steps)
        self.peak_learning_rate = peak_learning_rate
        self.total_steps = total_steps
        self.warmup_steps = warmup_steps
        self.end_learning_rate = end_learning_rate
        self._lengths = None

    def track_in(self, optimizer):
        """Keeps `total_steps` and `warmup_steps` in a variable of
        `optimizer` (the one whose `learning_rate` this is), for `resize`.

        An optimizer variable, not one of the schedule's own: JAX's
        compiled step receives the optimizer's variables as its state and
        would otherwise fold the value in as a constant.
        """
        self._lengths = optimizer.add_variable(
            shape=(2,), dtype="float32", name="schedule_lengths")
        self._lengths.assign([self.total_steps, self.warmup_steps])
        _TRACKED[optimizer] = self

    @staticmethod
    def tracked_in(optimizer):
        """The schedule that called `track_in(optimizer)`, or None."""
        return _TRACKED.get(optimizer)

    def resize(self, total_steps, warmup_steps):
        """Gives the schedule new lengths; a train step compiled before
        follows them when the schedule was `track_in` its optimizer."""
        _check_lengths(total_steps, warmup_steps)
        if self._lengths is None:
            raise ValueError(
                "This WarmupLinearDecay is compiled with fixed lengths: "
                "call `track_in(optimizer)` before compiling to resize it.")
        self.total_steps = total_steps
        self.warmup_steps = warmup_steps
        self._lengths.assign([total_steps, warmup_steps])

    def __call__(self, step):
        step = ops.cast(step, "float32")
        peak = ops.cast(self.peak_learning_rate, "float32")
        end = ops.cast(self.end_learning_rate, "float32")
        if self._lengths is None:
            total, warmup_steps = self.total_steps, self.warmup_steps
        else:
            total, warmup_steps = self._lengths[0], self._lengths[1]
        # max(..., 1) keeps both ratios finite when a phase has no steps.
        warmup = step / ops.maximum(warmup_steps, 1.0)
        decay_steps = ops.maximum(total - warmup_steps, 1.0)
        remaining = (total - step) / decay_steps
        decayed = end + (peak - end) * ops.clip(remaining, 0.0, 1.0)
        return ops.where(step < warmup_steps, peak * warmup, decayed)

    def get_config(self):
        return {
            "peak_learning_rate": self.peak_learning_rate,
            "total_steps": self.total_steps,
            "warmup_steps": self.warmup_steps,
            "end_learning_rate": self.end_learning_rate,
        }


# optimizer -> the schedule tracked in it; a Keras optimizer keeps its
# schedule where its public API does not reach.
_TRACKED = weakref.WeakKeyDictionary()


def _check_lengths(total_steps, warmup_steps):
    if total_steps < 1 or not 0 <= warmup_steps <= total_steps:
        raise ValueError(
            "WarmupLinearDecay needs 1 <= total_steps and "
            f"0 <= warmup_steps <= total_steps; got total_steps="
            f"{total_steps}, warmup_steps={warmup_steps}."
        )
