import functools

import keras

from keras_bert.layers.bert_initializer import BertInitializer
from keras_bert.models.lora import lora_layers
from keras_bert.models.task import Task
from keras_bert.models.task_mixin import TaskMixin
from keras_bert.optimizers.finetune_recipe import LEARNING_RATE
from keras_bert.optimizers.finetune_recipe import LORA_LEARNING_RATE
from keras_bert.optimizers.finetune_recipe import finetune_optimizer


def head_layers(backbone, units, dropout, name):
    """The dropout and dense layers of a task head, named `{name}_dropout`
    and `{name}_head` (checkpoint conversion finds the head by that name).

    The kernel starts as the backbone's do (truncated normal with its
    `initializer_range`), and both layers follow its dtype policy.
    """
    head_dropout = keras.layers.Dropout(
        dropout, dtype=backbone.dtype_policy, name=f"{name}_dropout"
    )
    head = keras.layers.Dense(
        units,
        kernel_initializer=BertInitializer(backbone.initializer_range),
        dtype=backbone.dtype_policy,
        name=f"{name}_head",
    )
    return head_dropout, head


def float32_logits(x):
    # Logits in float32 so the loss is stable under mixed precision.
    return keras.layers.Activation("linear", dtype="float32", name="logits")(x)


class FinetuningMixin(TaskMixin):
    """The fine-tuning recipe of `FinetuningTask`, for Functional and
    subclassed tasks alike (see `TaskMixin`)."""

    def compile(
        self,
        optimizer="auto",
        loss="auto",
        metrics="auto",
        learning_rate="auto",
        num_train_steps="auto",
        warmup_ratio=0.1,
        weight_decay=0.01,
        **kwargs,
    ):
        """Configures training; "auto" picks the paper's fine-tuning recipe.

        Args:
            optimizer: "auto" or a Keras optimizer.
            loss: "auto" (the task's loss) or a Keras loss.
            metrics: "auto" (the task's metrics) or a list of metrics.
            learning_rate: float or "auto". Peak learning rate of the
                "auto" optimizer; "auto" is the paper's 5e-5, or 2e-3 when
                the backbone trains LoRA adapters (`enable_lora`; resolved
                again by the first `fit` when `num_train_steps="auto"`).
            num_train_steps: "auto", int or None. Total optimizer steps,
                for the warmup and linear decay: "auto" takes them from
                the first `fit`; None keeps the rate constant.
            warmup_ratio: float. Fraction of the steps warming up.
            weight_decay: float. AdamW decoupled weight decay.
            **kwargs: passed to `keras.Model.compile` (e.g. `jit_compile`).
        """
        self._sized_compile = None
        if optimizer == "auto":
            if num_train_steps == "auto":
                # Called with the run's length by the first `fit`.
                self._sized_compile = functools.partial(
                    self.compile, optimizer, loss, metrics, learning_rate,
                    warmup_ratio=warmup_ratio, weight_decay=weight_decay,
                    **kwargs)
            if learning_rate == "auto":
                learning_rate = self.default_learning_rate()
            optimizer = finetune_optimizer(
                learning_rate=learning_rate,
                num_train_steps=(None if num_train_steps == "auto"
                                 else num_train_steps),
                warmup_ratio=warmup_ratio,
                weight_decay=weight_decay,
                exclude_from_weight_decay=self.unread_weights(),
            )
        if loss == "auto":
            loss = self.default_loss()
        if metrics == "auto":
            metrics = self.default_metrics()
            kwargs.setdefault("weighted_metrics", self.default_weighted_metrics())
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def default_learning_rate(self):
        """The recipe's peak rate for this model as it is now: the paper's
        5e-5, or 2e-3 once the backbone trains LoRA adapters."""
        if lora_layers(self.backbone):
            return LORA_LEARNING_RATE
        return LEARNING_RATE

    def default_loss(self):
        raise NotImplementedError

    def default_metrics(self):
        return None

    def default_weighted_metrics(self):
        # Metrics that honour sample weights (Keras applies them to
        # `weighted_metrics` only), e.g. to skip ignored token positions.
        return None


class FinetuningTask(FinetuningMixin, Task):
    """Base of the fine-tuning heads: the paper's recipe, compiled by default.

    `compile()` with no arguments (which every fine-tuning task runs on
    construction) gives AdamW with a linear warmup over the first
    `warmup_ratio` of the run and linear decay to 0 (see
    `keras_bert.optimizers.finetune_recipe`), and the task's own loss and
    metrics (`default_loss()` / `default_metrics()` of each subclass). The
    run's length is taken from the first `fit` (epochs x batches per
    epoch) unless `num_train_steps` is given; when `fit` cannot know it (an
    infinite dataset without `steps_per_epoch`) the rate stays constant.
    """
