"""The paper's fine-tuning optimizer, on the pretraining optimizer's parts.

BERT fine-tunes every task with AdamW (decoupled weight decay 0.01, not on
biases or LayerNorm; epsilon 1e-6), a peak learning rate of 2e-5 to 5e-5
reached by a linear warmup over the first 10% of the steps and decayed
linearly to 0 at the last step, and the gradient's global norm clipped to
1.0. The task models' default `compile()` uses `finetune_optimizer`.
"""

from keras_bert.optimizers.bert_optimizer import create_optimizer

# The paper's peak rate when the whole model trains.
LEARNING_RATE = 5e-5
# The peak rate when only LoRA adapters and the task's heads train
# (`BertBackbone.enable_lora`): the adapters start at zero and hold few
# weights, and at the paper's rate they barely move in a short run;
# chosen by measurement (docs/finetuning.md, "LoRA").
LORA_LEARNING_RATE = 2e-3


def finetune_optimizer(
    learning_rate=LEARNING_RATE,
    num_train_steps=None,
    warmup_ratio=0.1,
    weight_decay=0.01,
    global_clipnorm=1.0,
    exclude_from_weight_decay=(),
):
    """AdamW with the paper's fine-tuning schedule.

    Args:
        learning_rate: float. Peak learning rate (the paper: 2e-5 to 5e-5).
        num_train_steps: int or None. Optimizer steps of the whole run
            (`ceil(examples / batch_size) * epochs`). The warmup and decay
            need it; with None the learning rate stays constant.
        warmup_ratio: float. Fraction of the steps spent warming up.
        weight_decay: float. Decoupled weight decay (not on biases and
            LayerNorm).
        global_clipnorm: float or None. Clip the gradients' global norm.
        exclude_from_weight_decay: list of variables also kept out of
            weight decay (see `create_optimizer`).

    Returns:
        A `keras_bert.optimizers.adamw.AdamW` on a `WarmupLinearDecay`
        schedule.

    Example:
    >>> optimizer = finetune_optimizer(3e-5, num_train_steps=1000)
    >>> float(optimizer.learning_rate)  # step 0: the warmup starts at 0
    0.0
    """
    if not 0.0 <= warmup_ratio < 1.0:
        raise ValueError(
            f"warmup_ratio must be in [0, 1), got {warmup_ratio}."
        )
    if num_train_steps is None:
        # A one-step "decay" that ends where it starts: a constant rate.
        return create_optimizer(
            total_steps=1,
            learning_rate=learning_rate,
            warmup_steps=0,
            weight_decay=weight_decay,
            global_clipnorm=global_clipnorm,
            end_learning_rate=learning_rate,
            exclude_from_weight_decay=exclude_from_weight_decay,
        )
    if num_train_steps < 1:
        raise ValueError(
            f"num_train_steps must be >= 1, got {num_train_steps}: is the "
            "training set empty?"
        )
    return create_optimizer(
        total_steps=int(num_train_steps),
        learning_rate=learning_rate,
        warmup_steps=int(warmup_ratio * num_train_steps),
        weight_decay=weight_decay,
        global_clipnorm=global_clipnorm,
        exclude_from_weight_decay=exclude_from_weight_decay,
    )
