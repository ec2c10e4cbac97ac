"""Inference over many rows with little padding and few compiled shapes."""

import weakref

import keras
import numpy as np
from keras import ops

from keras_bert.packed_inputs import PACKED_INPUTS
from keras_bert.quantization import needs_xla

# On TensorFlow a model's first `predict_on_batch` traces it and compiles
# it with XLA, which costs more than a few eager calls: a model's first
# calls, this many at most, run eagerly when the job needs no more
# (docs/performance.md, cold start).
EAGER_CALLS = 4
# Model -> the eager calls it has made.
_EAGER_CALLS_MADE = weakref.WeakKeyDictionary()


def predict_batch(model, x, calls):
    """`model.predict_on_batch(x)` as NumPy, for one of `calls` calls.

    On TensorFlow, a job of at most `EAGER_CALLS` calls, among a model's
    first `EAGER_CALLS` calls, calls the model eagerly: a one-line
    prediction then pays no compilation, and a model used for longer
    compiles once and runs compiled from then on. A quantized model keeps
    XLA (TensorFlow's own int8 kernels are slower than compiling), as do
    JAX (whose eager calls compile each operation) and PyTorch (eager
    anyway).
    """
    made = _EAGER_CALLS_MADE.get(model, 0)
    if (keras.config.backend() == "tensorflow" and made + calls <= EAGER_CALLS
            and model.predict_function is None and not needs_xla(model)):
        _EAGER_CALLS_MADE[model] = made + 1
        return keras.tree.map_structure(
            lambda out: np.asarray(ops.convert_to_numpy(out)),
            model(x, training=False))
    return model.predict_on_batch(x)


def predict_bucketed(model, x, batch_size=32, bucket_lengths=None,
                     progress=None):
    """Runs `model` on length-sorted, bucketed batches.

    See `BertBackbone.predict_bucketed`, which calls this. `model` is a
    `BertBackbone` or a task model on one whose rows are independent (a
    text embedder, a cross-encoder); `progress` is an optional
    `keras.utils.Progbar` advanced by the rows of each batch.
    """
    x = {key: np.asarray(ops.convert_to_numpy(x[key]))
         for key in PACKED_INPUTS}
    mask = x["padding_mask"] != 0
    num_rows, length = mask.shape
    # Last real position + 1, so a mask with holes is never cut short.
    lengths = np.where(mask.any(axis=1),
                       length - np.argmax(mask[:, ::-1], axis=1), 1)
    if bucket_lengths is None and compiles_no_shapes(model):
        bucket_lengths = range(1, length)  # each batch to its longest row
    bucket_lengths = resolve_bucket_lengths(model, bucket_lengths)
    buckets = sorted({b for b in bucket_lengths if b < length} | {length})
    order = np.argsort(lengths, kind="stable")
    results = None
    calls = -(-num_rows // batch_size)
    for start in range(0, num_rows, batch_size):
        rows = order[start:start + batch_size]
        if num_rows > batch_size and len(rows) < batch_size:
            rows = np.concatenate(
                [rows, np.repeat(rows[-1:], batch_size - len(rows))])
        bucket = buckets[np.searchsorted(buckets, lengths[rows].max())]
        outputs = predict_batch(
            model, {key: value[rows, :bucket] for key, value in x.items()},
            calls)
        if results is None:
            results = keras.tree.map_structure(
                lambda out: np.zeros(
                    (num_rows,) + _unbucketed_shape(out, bucket, length),
                    out.dtype),
                outputs)
        real = min(len(rows), num_rows - start)
        keras.tree.map_structure(
            lambda result, out: _write_rows(
                result, out[:real], rows[:real], bucket),
            results, outputs)
        if progress is not None:
            progress.add(real)
    # Inside a bucket, padded positions hold the model's (meaningless)
    # values; zero them so the result does not depend on the bucket.
    if not isinstance(results, dict):
        if results.ndim == 3 and results.shape[1] == length:
            results[~mask] = 0  # a token classifier's logits
        return results
    for key in ("sequence_output", "hidden_states"):
        for value in keras.tree.flatten(results.get(key, [])):
            value[~mask] = 0
    return results



def progress_bar(total, batch_size, verbose, unit_name="step"):
    """The `progress` of `predict_bucketed` for `total` rows: a
    `keras.utils.Progbar`, or None when `verbose` is 0 or `total` is 0;
    `verbose="auto"` shows one when there is more than one batch."""
    if verbose == "auto":
        verbose = total > batch_size
    return keras.utils.Progbar(total, unit_name=unit_name) if (
        verbose and total) else None


def compiles_no_shapes(model):
    """Whether `model` runs every batch shape without compiling it: eager
    PyTorch. Buckets then save no compilation, and padding a batch past
    its longest row is only work (and keeps a lone row from PyTorch's
    fused encoder kernel, which takes unpadded rows)."""
    return keras.config.backend() == "torch" and not model.jit_compile


def resolve_bucket_lengths(model, bucket_lengths):
    """`bucket_lengths`, or when None `default_bucket_lengths` of the
    positions of `model` (a `BertBackbone` or a task on one)."""
    if bucket_lengths is not None:
        return bucket_lengths
    return default_bucket_lengths(
        getattr(model, "backbone", model).max_sequence_length)


def default_bucket_lengths(max_length):
    """Multiples of 8 up to 64, of 16 up to 128, then of 32.

    Padding costs work in proportion to the length, a compiled shape
    costs one compilation: the steps grow with the length, so long rows
    are cut as closely as short ones relative to their cost: 16 shapes up
    to 256, 24 up to 512. docs/retrieval.md measures the padding this
    leaves on SST-2 sentences and SQuAD paragraphs, against
    sentence-transformers' (padding to each batch's longest text) and the
    earlier multiples of 16, then 128.
    """
    return [length for length in (
        list(range(8, 64, 8)) + list(range(64, 128, 16))
        + list(range(128, max_length + 1, 32))) if length <= max_length]


def _length_axes(out, bucket):
    """Axes of a batch output that run over positions (size == bucket)."""
    if out.ndim == 4:  # attentions: (batch, heads, queries, keys)
        return (2, 3)
    return (1,) if out.ndim == 3 and out.shape[1] == bucket else ()


def _unbucketed_shape(out, bucket, length):
    axes = _length_axes(out, bucket)
    return tuple(length if axis in axes else size
                 for axis, size in enumerate(out.shape) if axis > 0)


def _write_rows(result, out, rows, bucket):
    index = (rows,) + tuple(
        slice(0, bucket) if axis in _length_axes(out, bucket) else slice(None)
        for axis in range(1, out.ndim))
    result[index] = out
