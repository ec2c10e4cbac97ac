"""The pretraining optimizer: AdamW or LAMB on BERT's learning-rate schedule."""

import keras

from keras_bert.optimizers.adamw import AdamW
from keras_bert.optimizers.warmup_linear_decay import WarmupLinearDecay

# Variable names kept out of weight decay, as in the original BERT:
# LayerNorm scale and offset, and every bias (including the MLM output_bias).
NO_WEIGHT_DECAY_NAMES = ("gamma", "beta", "bias")

# The paper's recipe: 10,000 warmup steps out of 1,000,000.
PAPER_WARMUP_FRACTION = 0.01


def create_optimizer(
    total_steps,
    learning_rate=1e-4,
    warmup_steps=None,
    weight_decay=0.01,
    global_clipnorm=1.0,
    optimizer="adamw",
    end_learning_rate=0.0,
    beta_2=0.999,
    resizable_schedule=False,
    exclude_from_weight_decay=(),
):
    """Builds BERT's pretraining optimizer.

    AdamW (epsilon 1e-6 added after the bias correction as in PyTorch,
    `keras_bert.optimizers.adamw.AdamW`) with decoupled weight decay that
    skips LayerNorm weights and biases, the gradient clipped to a global
    norm, on a `WarmupLinearDecay` schedule. `optimizer="lamb"`
    gives LAMB (layer-wise trust ratios, for large batches) with the same
    schedule, decay and clipping.

    Args:
        total_steps: int. Length of the run; the rate decays to
            `end_learning_rate` at this step.
        learning_rate: float. Peak rate (the paper: 1e-4).
        warmup_steps: int or None. None scales the paper's 10k-of-1M
            warmup to the run: 1% of `total_steps`, at least 1.
        weight_decay: float. Decoupled decay rate (the paper: 0.01).
        global_clipnorm: float or None. Clip the gradient to this global
            norm (the paper: 1.0).
        optimizer: str. "adamw" or "lamb".
        end_learning_rate: float. Rate at the end of the decay.
        beta_2: float. Decay of the squared-gradient average (the paper:
            0.999; RoBERTa took 0.98 for its large batches).
        resizable_schedule: bool. Keep the schedule's lengths in an
            optimizer variable (`WarmupLinearDecay.track_in`), so that
            `resize_schedule` can change them after the train step is
            compiled (`keras-bert pretrain`'s time budget). Off by default:
            a model saved with this optimizer loads back only where the
            optimizer is made the same way, not from the Keras config.
        exclude_from_weight_decay: list of variables kept out of weight
            decay besides LayerNorm weights and biases: those no output of
            the model reads (a task's `unread_weights()`), which JAX gives
            a zero gradient that decay alone would shrink.

    Example:
    >>> opt = create_optimizer(total_steps=1000, learning_rate=5e-4)
    >>> type(opt).__name__, opt.weight_decay, opt.global_clipnorm
    ('AdamW', 0.01, 1.0)
    """
    if warmup_steps is None:
        warmup_steps = max(1, round(PAPER_WARMUP_FRACTION * total_steps))
    schedule = WarmupLinearDecay(
        peak_learning_rate=learning_rate,
        total_steps=total_steps,
        warmup_steps=min(warmup_steps, total_steps),
        end_learning_rate=end_learning_rate,
    )
    common = dict(
        learning_rate=schedule,
        weight_decay=weight_decay,
        beta_2=beta_2,
        epsilon=1e-6,
        global_clipnorm=global_clipnorm,
    )
    if optimizer == "adamw":
        result = AdamW(**common)
    elif optimizer == "lamb":
        result = keras.optimizers.Lamb(**common)
    else:
        raise ValueError(
            f"Unknown optimizer {optimizer!r}: use 'adamw' or 'lamb'."
        )
    result.exclude_from_weight_decay(
        var_list=list(exclude_from_weight_decay) or None,
        var_names=list(NO_WEIGHT_DECAY_NAMES))
    if resizable_schedule:
        schedule.track_in(result)
    return result


def resize_schedule(optimizer, total_steps, warmup_steps):
    """Sets the lengths of the schedule of an optimizer made by
    `create_optimizer(..., resizable_schedule=True)`; a model compiled
    with it follows them without compiling again.

    Args:
        optimizer: what `create_optimizer` returned.
        total_steps: int. The new length of the run.
        warmup_steps: int. The new warmup (at most `total_steps`).
    """
    schedule = WarmupLinearDecay.tracked_in(optimizer)
    if schedule is None:
        raise ValueError(
            "This optimizer's schedule has fixed lengths: make it with "
            "`create_optimizer(..., resizable_schedule=True)` to resize it.")
    schedule.resize(total_steps, min(warmup_steps, total_steps))
