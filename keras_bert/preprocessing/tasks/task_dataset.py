"""Feeds raw task input through a preprocessor: in a `tf.data` pipeline,
or at once into arrays when the input is small.

The task models call these from `fit`, `evaluate` and `predict` when they
carry a preprocessor, so that strings, string pairs and word lists can be
passed where tensors would otherwise go.
"""

import keras
import numpy as np
import tensorflow as tf

from keras_bert.packed_inputs import PACKED_INPUTS
from keras_bert.preprocessing.host_preprocessing import MAX_EAGER_EXAMPLES
from keras_bert.preprocessing.prefetch_for_fit import prefetch_for_fit
from keras_bert.preprocessing.preprocessing_layer import convert_inputs

DEFAULT_BATCH_SIZE = 32


def preprocessed_dataset(preprocessor, x, y=None, sample_weight=None,
                         batch_size=None, shuffle=False, trim=None):
    """Returns a batched `tf.data.Dataset` of `preprocessor(x, y, sw)`.

    Args:
        preprocessor: a callable `(x, y=None, sample_weight=None)` that
            returns `x` or `(x, y[, sample_weight])` for a batch.
        x: raw input for one batch axis (a list of strings, a tuple of
            two lists for pairs, a list of word lists, a dict of these),
            or a `tf.data.Dataset` of already batched `x` or `(x, y[, sw])`.
        y: labels, when `x` is not a dataset.
        sample_weight: per-example weights, when `x` is not a dataset.
        batch_size: int. Examples per batch (32 when None), when `x` is not
            a dataset.
        shuffle: bool. Reshuffle the examples each epoch, when `x` is not a
            dataset.
        trim: None, "inputs" or "inputs_and_labels": cut each batch's
            padding (`trim_padding`).
    """
    return preprocessed_batches(preprocessor, input_batches(
        x, y=y, sample_weight=sample_weight, batch_size=batch_size,
        shuffle=shuffle), trim=trim)


def input_batches(x, y=None, sample_weight=None, batch_size=None,
                  shuffle=False):
    """`preprocessed_dataset`'s raw batches, before the preprocessor: `x`
    itself when it is a `tf.data.Dataset` (then `y` and `sample_weight`
    must be None), else a dataset of `(x[, y[, sw]])` batches."""
    if isinstance(x, tf.data.Dataset):
        if y is not None or sample_weight is not None:
            raise ValueError(
                "Pass labels inside the tf.data.Dataset as (x, y) elements, "
                "not as a separate `y`/`sample_weight`."
            )
        return x
    data = _raw_data(x, y, sample_weight)
    dataset = tf.data.Dataset.from_tensor_slices(data)
    if shuffle:
        dataset = dataset.shuffle(
            int(dataset.cardinality()), reshuffle_each_iteration=True
        )
    return dataset.ragged_batch(batch_size or DEFAULT_BATCH_SIZE)


def preprocessed_batches(preprocessor, batches, trim=None):
    """`batches` (from `input_batches`) mapped through `preprocessor`, with
    their padding cut when `trim` says what to cut (`trim_padding`),
    prefetched for `fit`.

    Each new iterator of the result instantiates the preprocessing
    function again, and TensorFlow optimizes its graph (Grappler) each
    time, a noticeable pause for a pair preprocessor. `fit` repeats
    `batches`
    (`batches.repeat()`, each pass reshuffled) and sets the steps of one
    pass, so that Keras keeps one iterator for every epoch.
    """
    return prefetch_for_fit(batches.map(
        lambda *data: trim_padding(preprocessor(*data), trim),
        num_parallel_calls=tf.data.AUTOTUNE,
    ))


def preprocessed_arrays(preprocessor, x, y=None, sample_weight=None,
                        trim=None):
    """`preprocessor(x[, y[, sw]])` computed at once, as NumPy arrays, with
    the padding no example uses cut when `trim` says what to cut
    (`trim_padding`); None when `x` is a `tf.data.Dataset` or holds more
    than `MAX_EAGER_EXAMPLES` examples (use `preprocessed_dataset` then)."""
    if isinstance(x, tf.data.Dataset):
        return None
    data = _raw_data(x, y, sample_weight)
    if keras.tree.flatten(data)[0].shape[0] > MAX_EAGER_EXAMPLES:
        return None
    return keras.tree.map_structure(
        np.asarray, trim_padding(preprocessor(*data), trim))


def padding_buckets(max_length):
    """The lengths `trim_padding` cuts a batch to: powers of two from 16,
    then `max_length`.

    Each length a batch takes is one more compilation of the train step
    (XLA on TensorFlow and JAX), so these are coarser than `predict`'s
    buckets: batches of 32 shuffled SST-2 train sentences take 32 or 64
    positions.

    >>> padding_buckets(128)
    [16, 32, 64, 128]
    """
    lengths, length = [], 16
    while length < max_length:
        lengths.append(length)
        length *= 2
    return lengths + [max_length]


def trim_padding(data, trim):
    """Cuts the padding every row of a preprocessed batch shares.

    The token ids, segment ids and padding mask (last axis) are cut to the
    shortest of `padding_buckets` that holds the batch's last real token,
    so a batch of short sentences packed to 512 runs at 16, 32 or 64
    positions. The model's outputs at the real tokens do not depend on the
    padding after them (attention never looks at it, positions count
    from the start), so only the work changes.

    Args:
        data: the preprocessor's output, `x` or `(x, y[, sample_weight])`,
            with `x` a dict of `(..., sequence_length)` tensors.
        trim: None (return `data` as it is), "inputs" (cut `x`), or
            "inputs_and_labels" (also `y` and `sample_weight`, which then
            have a sequence axis second: per-token labels and weights).
    """
    if not trim:
        return data
    x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
    length = x["padding_mask"].shape[-1]
    if length is None:
        return data
    buckets = tf.constant(padding_buckets(length))
    mask = tf.cast(tf.cast(x["padding_mask"], tf.bool), tf.int32)
    mask = tf.reshape(mask, [-1, length])
    # The last real position + 1 of any row, so a mask with holes is kept.
    used = tf.reduce_max(mask * tf.range(1, length + 1))
    cut = tf.gather(buckets, tf.searchsorted(buckets, [used]))[0]
    if tf.executing_eagerly():
        # Eager arrays of any backend take a Python int; JAX 0.4.30 refuses
        # a TensorFlow scalar as a slice bound.
        cut = int(cut)
    x = {key: value[..., :cut] if key in PACKED_INPUTS else value
         for key, value in x.items()}
    if trim == "inputs_and_labels":
        y, sample_weight = (None if part is None else part[:, :cut]
                            for part in (y, sample_weight))
    return keras.utils.pack_x_y_sample_weight(x, y, sample_weight)


def _raw_data(x, y, sample_weight):
    """`(x[, y[, sw]])` checked and converted to TF tensors."""
    if any(np.size(part) == 0 for part in keras.tree.flatten(x)) or not (
        keras.tree.flatten(x)
    ):
        raise ValueError("No examples: the input `x` is empty.")
    if y is None and sample_weight is not None:
        raise ValueError("`sample_weight` needs labels `y`.")
    # A tuple around `x` alone keeps a pair `(a, b)` one input.
    data = (x,) if y is None else (x, y) if sample_weight is None else (
        x, y, sample_weight)
    return convert_inputs(data)
