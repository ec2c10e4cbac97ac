import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """BERT's learning rate: linear warmup to a peak, then linear decay.

    The rate rises from 0 to `peak_learning_rate` over `warmup_steps`, then
    falls linearly to `end_learning_rate` at `total_steps` and stays there.
    The paper uses a peak of 1e-4, 10,000 warmup steps and 1,000,000 steps.

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
        if total_steps < 1 or not 0 <= warmup_steps <= total_steps:
            raise ValueError(
                "WarmupLinearDecay needs 1 <= total_steps and "
                f"0 <= warmup_steps <= total_steps; got total_steps="
                f"{total_steps}, warmup_steps={warmup_steps}."
            )
        self.peak_learning_rate = peak_learning_rate
        self.total_steps = total_steps
        self.warmup_steps = warmup_steps
        self.end_learning_rate = end_learning_rate

    def __call__(self, step):
        step = ops.cast(step, "float32")
        peak = ops.cast(self.peak_learning_rate, "float32")
        end = ops.cast(self.end_learning_rate, "float32")
        # max(..., 1) keeps both ratios finite when a phase has no steps.
        warmup = step / max(self.warmup_steps, 1)
        decay_steps = max(self.total_steps - self.warmup_steps, 1)
        remaining = (self.total_steps - step) / decay_steps
        decayed = end + (peak - end) * ops.clip(remaining, 0.0, 1.0)
        return ops.where(step < self.warmup_steps, peak * warmup, decayed)

    def get_config(self):
        return {
            "peak_learning_rate": self.peak_learning_rate,
            "total_steps": self.total_steps,
            "warmup_steps": self.warmup_steps,
            "end_learning_rate": self.end_learning_rate,
        }
