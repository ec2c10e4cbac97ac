import contextlib
import contextvars

import keras
import numpy as np

# True while a model is built only to receive a checkpoint's weights.
_DEFERRED = contextvars.ContextVar("keras_bert_deferred_initialization",
                                   default=False)


@contextlib.contextmanager
def deferred_initialization():
    """Builds the BERT weights that a checkpoint is about to overwrite as
    zeros, without drawing them.

    Drawing truncated-normal weights is most of the time a model takes to
    build before its checkpoint is read: on JAX each weight shape compiles
    its own random program, and on PyTorch the rejection sampling is slow.
    Inside this context `BertInitializer` answers with zeros (no
    computation on any backend); outside it, as before, with its draw. The
    loaders build a backbone inside it and draw again (`reinitialize`)
    whatever the checkpoint then lacks, so the loaded model is the one a
    normal build and load give. Only keras_bert's own initializers read
    the context; other models in the process are not affected.

    Example:
    >>> with deferred_initialization():
    ...     zeros = BertInitializer(0.02)((2, 3))
    >>> float(np.abs(zeros).max()), float(np.abs(BertInitializer(0.02)((2, 3))).max()) > 0
    (0.0, True)
    """
    token = _DEFERRED.set(True)
    try:
        yield
    finally:
        _DEFERRED.reset(token)


@keras.saving.register_keras_serializable(package="keras_bert")
class BertInitializer(keras.initializers.TruncatedNormal):
    """BERT's weight initializer: a truncated normal of stddev
    `initializer_range`, or zeros under `deferred_initialization`.

    Args:
        stddev: float. Standard deviation of the normal before truncation
            at two standard deviations (BERT's `initializer_range`).
        seed: int or None. As for `keras.initializers.TruncatedNormal`.

    Example:
    >>> values = BertInitializer(0.02)((64, 64))
    >>> bool(np.abs(values).max() <= 0.04)
    True
    """

    def __init__(self, stddev=0.02, seed=None):
        super().__init__(mean=0.0, stddev=stddev, seed=seed)

    def __call__(self, shape, dtype=None):
        if not _DEFERRED.get():
            return super().__call__(shape, dtype=dtype)
        dtype = keras.backend.standardize_dtype(dtype or keras.config.floatx())
        if dtype == "bfloat16":
            # NumPy's bfloat16 is ml_dtypes', which JAX and TF depend on.
            import ml_dtypes

            return np.zeros(shape, ml_dtypes.bfloat16)
        return np.zeros(shape, dtype)

    def get_config(self):
        return {"stddev": self.stddev, "seed": self.seed}


def reinitialize(layer):
    """Draws again the `BertInitializer` weights of a Dense-like `layer`
    (its `kernel`; a bias starts at zero either way): for a part of a
    model built under `deferred_initialization` that a checkpoint did not
    fill."""
    initializer = layer.kernel_initializer
    layer.kernel.assign(initializer(tuple(layer.kernel.shape),
                                    dtype=layer.kernel.dtype))
