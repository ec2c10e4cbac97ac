"""The last step of the package's `tf.data` pipelines for Keras' `fit`."""

import tensorflow as tf


def prefetch_for_fit(dataset):
    """Prefetches `dataset` for `fit`/`evaluate`/`predict`, with tf.data's
    autotuning thread off.

    With autotuning on, every iterator starts a background thread that
    re-tunes the pipeline on a doubling period (up to a minute). When
    Keras drops its iterator at the end of `fit`, `evaluate` or `predict`
    (on every backend) it waits for that thread, and at times the thread
    sleeps out the rest of its period first: `fit` returned seconds to
    tens of seconds after its last step in about a third of the timed fits
    with autotuning on, in none with it off (docs/performance.md,
    "Figures behind the code's comments"). `AUTOTUNE` values still
    work without it: a parallel `map` runs at the pool's size and
    `prefetch` grows its buffer on its own; the pretraining step rate and
    the stream's speed were the same both ways (docs/pretraining.md).

    Args:
        dataset: a `tf.data.Dataset`.

    Returns:
        `dataset.prefetch(tf.data.AUTOTUNE)` with autotuning disabled.

    Example:
    >>> import tensorflow as tf
    >>> ds = prefetch_for_fit(tf.data.Dataset.range(3).map(
    ...     lambda x: 2 * x, num_parallel_calls=tf.data.AUTOTUNE))
    >>> [int(x) for x in ds], ds.options().autotune.enabled
    ([0, 2, 4], False)
    """
    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.prefetch(tf.data.AUTOTUNE).with_options(options)
