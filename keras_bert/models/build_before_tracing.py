"""A task's optimizer and metrics, built before TensorFlow traces a step.

Without a `tf.distribute` strategy, Keras on TensorFlow leaves the
optimizer's variables (Adam's moments) and the compiled metrics' to be
created inside the first traced train step. A `tf.function` that creates
variables on its first trace is traced a second time without them, so
every first `fit` built BERT's whole training step twice in Python. The
first `fit` of an all-MiniLM-L6-v2 classifier (4 steps, XLA) took 22.5 s
instead of 15.8 s on 2 cores, a tiny one's 12.5-12.8 s instead of
9.2-9.8 s. Keras builds them up front itself under a strategy, and on
JAX; this does the same on TensorFlow, from the dataset's element spec.
"""

import keras


def build_before_tracing(model, dataset):
    """Builds what the first training step of `model` would create.

    Only on TensorFlow without a distribution strategy (elsewhere Keras
    builds up front), and only for a `tf.data` dataset, whose element spec
    gives the structure, shapes and dtypes of a batch.
    """
    spec = getattr(dataset, "element_spec", None)
    if (keras.config.backend() != "tensorflow" or spec is None
            or model._distribute_strategy is not None):
        return
    with model.distribute_strategy.scope():
        model._symbolic_build(data_batch=spec)
