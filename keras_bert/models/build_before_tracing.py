"""A task's optimizer and metrics, built before TensorFlow traces a step.

Without a `tf.distribute` strategy, Keras on TensorFlow leaves the
optimizer's variables (Adam's moments) and the compiled metrics' to be
created inside the first traced train step. A `tf.function` that creates
variables on its first trace is traced a second time without them, so
every first `fit` built BERT's whole training step twice in Python
(docs/performance.md has what that cost a first `fit`). Keras builds them
up front itself under a strategy, and on JAX; this does the same on
TensorFlow, from the dataset's element spec.
"""

import keras

from keras_bert._compat.model_compile import build_training_state
from keras_bert._compat.model_compile import has_distribution_strategy


def build_before_tracing(model, dataset):
    """Builds what the first training step of `model` would create.

    Only on TensorFlow without a distribution strategy (elsewhere Keras
    builds up front), and only for a `tf.data` dataset, whose element spec
    gives the structure, shapes and dtypes of a batch.
    """
    spec = getattr(dataset, "element_spec", None)
    if (keras.config.backend() != "tensorflow" or spec is None
            or has_distribution_strategy(model)):
        return
    build_training_state(model, spec)
