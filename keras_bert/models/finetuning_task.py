import keras

from keras_bert.models.task import Task
from keras_bert.training.finetune_recipe import finetune_optimizer


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
        kernel_initializer=keras.initializers.TruncatedNormal(
            stddev=backbone.initializer_range
        ),
        dtype=backbone.dtype_policy,
        name=f"{name}_head",
    )
    return head_dropout, head


def float32_logits(x):
    # Logits in float32 so the loss is stable under mixed precision.
    return keras.layers.Activation("linear", dtype="float32", name="logits")(x)


class FinetuningTask(Task):
    """Base of the fine-tuning heads: the paper's `compile()` and raw input.

    `compile()` with no arguments gives AdamW with linear warmup over the
    first `warmup_ratio` of `num_train_steps` and linear decay to 0 (see
    `keras_bert.training.finetune_recipe`), and the task's own loss and
    metrics (`default_loss()` / `default_metrics()` of each subclass).

    When the model has a `preprocessor`, `fit`, `evaluate` and `predict`
    take raw input (strings, string pairs, word lists; or a `tf.data`
    dataset of them): the preprocessor is mapped over a `tf.data` pipeline
    before the batches reach the model. Without one, they take the
    backbone's tensors as any Keras model does. A task whose preprocessing
    is not one batch in, one batch out (extractive QA makes several windows
    per question) sets `maps_preprocessor = False` and takes tensors.
    """

    maps_preprocessor = True

    def compile(
        self,
        optimizer="auto",
        loss="auto",
        metrics="auto",
        learning_rate=5e-5,
        num_train_steps=None,
        warmup_ratio=0.1,
        weight_decay=0.01,
        **kwargs,
    ):
        """Configures training; "auto" picks the paper's fine-tuning recipe.

        Args:
            optimizer: "auto" or a Keras optimizer.
            loss: "auto" (the task's loss) or a Keras loss.
            metrics: "auto" (the task's metrics) or a list of metrics.
            learning_rate: float. Peak learning rate for "auto".
            num_train_steps: int or None. Total optimizer steps, for the
                warmup and linear decay; None keeps the rate constant.
            warmup_ratio: float. Fraction of the steps warming up.
            weight_decay: float. AdamW decoupled weight decay.
            **kwargs: passed to `keras.Model.compile` (e.g. `jit_compile`).
        """
        if optimizer == "auto":
            optimizer = finetune_optimizer(
                learning_rate=learning_rate,
                num_train_steps=num_train_steps,
                warmup_ratio=warmup_ratio,
                weight_decay=weight_decay,
            )
        if loss == "auto":
            loss = self.default_loss()
        if metrics == "auto":
            metrics = self.default_metrics()
            kwargs.setdefault("weighted_metrics", self.default_weighted_metrics())
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def compile_from_config(self, config):
        # Keras skips a custom `compile` on load unless told how: the saved
        # config holds the resolved optimizer, loss and metrics objects.
        self.compile(**keras.saving.deserialize_keras_object(config))
        if self.built:
            self.optimizer.build(self.trainable_variables)

    def default_loss(self):
        raise NotImplementedError

    def default_metrics(self):
        return None

    def default_weighted_metrics(self):
        # Metrics that honour sample weights (Keras applies them to
        # `weighted_metrics` only), e.g. to skip ignored token positions.
        return None

    def _takes_raw_input(self):
        return self.preprocessor is not None and self.maps_preprocessor

    def _to_dataset(self, x, y=None, sample_weight=None, batch_size=None,
                    shuffle=False):
        # Preprocessors are TF graph code, so the pipeline is built lazily in
        # keras_bert.preprocessing; without one, inputs pass through as given.
        from keras_bert.preprocessing.tasks.task_dataset import (
            preprocessed_dataset,
        )

        return preprocessed_dataset(
            self.preprocessor,
            x,
            y=y,
            sample_weight=sample_weight,
            batch_size=batch_size,
            shuffle=shuffle,
        )

    def fit(self, x=None, y=None, batch_size=None, sample_weight=None,
            validation_data=None, shuffle=True, **kwargs):
        if not self._takes_raw_input():
            return super().fit(
                x, y, batch_size=batch_size, sample_weight=sample_weight,
                validation_data=validation_data, shuffle=shuffle, **kwargs,
            )
        x = self._to_dataset(x, y, sample_weight, batch_size, shuffle)
        if validation_data is not None:
            validation_data = self._to_dataset(
                *keras.utils.unpack_x_y_sample_weight(validation_data)
                if isinstance(validation_data, tuple)
                else (validation_data,),
                batch_size=batch_size,
            )
        # The pipeline shuffles (above); Keras cannot shuffle a dataset.
        return super().fit(x, validation_data=validation_data, shuffle=False,
                           **kwargs)

    def evaluate(self, x=None, y=None, batch_size=None, sample_weight=None,
                 **kwargs):
        # `fit` evaluates on the validation set it already preprocessed.
        if not self._takes_raw_input() or kwargs.get("_use_cached_eval_dataset"):
            return super().evaluate(
                x, y, batch_size=batch_size, sample_weight=sample_weight,
                **kwargs,
            )
        x = self._to_dataset(x, y, sample_weight, batch_size)
        return super().evaluate(x, **kwargs)

    def predict(self, x, batch_size=None, **kwargs):
        if not self._takes_raw_input():
            return super().predict(x, batch_size=batch_size, **kwargs)
        return super().predict(self._to_dataset(x, batch_size=batch_size),
                               **kwargs)
