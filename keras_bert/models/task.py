"""The base of the Functional task models."""

import keras

from keras_bert.models.task_mixin import TaskMixin


class Task(TaskMixin, keras.Model):
    """Base for task models: a `BertBackbone`, a head, an optional preprocessor.

    Subclasses build a Functional model on `backbone.input`, call
    `Task.__init__` with it, set their own attributes and end with
    `self.compile()`: a task comes compiled with its default recipe, so
    `fit` works at once, and `compile()` with other arguments overrides it.
    A default schedule whose length is "auto" is sized by the first `fit`
    (its epochs times its steps per epoch), when that call can know them.

    When the model has a `preprocessor`, `fit`, `evaluate` and `predict`
    take raw input (strings, string pairs, word lists; or a `tf.data`
    dataset of them): the preprocessor is mapped over a `tf.data` pipeline
    before the batches reach the model, and `fit` and `evaluate` cut the
    padding no example of a batch uses (`trims_padding`; the results are
    those of the full batches). Without one, they take the
    backbone's tensors as any Keras model does. A task whose preprocessing
    is not one batch in, one batch out (extractive QA makes several windows
    per question) sets `maps_preprocessor = False` and takes tensors.

    This base also gives every task the same serialization (`get_config`
    stores the backbone and preprocessor as nested Keras objects),
    `from_preset` and `save_to_preset`. All of it lives in `TaskMixin`
    (the presets in `TaskPresetsMixin`); a task that is a subclassed model
    takes it from there, with `keras.Model`, instead of from this class
    (see `TaskMixin` for why).
    """
