"""Base class for keras_bert's TensorFlow-graph preprocessing layers.

The layers run TensorFlow (and tensorflow-text) ops whatever the Keras backend
is, so the same layer works eagerly, in `tf.data.Dataset.map`, and inside a
`tf.function` or exported SavedModel. Only the boundary differs:

* Inside a TF graph (`tf.data`, `tf.function`) inputs and outputs are TF
  tensors and nothing is converted.
* In an eager call, Python values, NumPy arrays and backend tensors are turned
  into TF tensors on the way in; on the way out, dense numeric outputs become
  tensors of the active Keras backend (`tf.Tensor`, `jax.Array`,
  `torch.Tensor`) so they feed a Keras model directly, ragged outputs stay
  `tf.RaggedTensor`, and string outputs become Python `str` (nested lists
  for batches).

TensorFlow is imported at a layer's first TensorFlow call, not when the
layer is built (`tensorflow_modules`): a model's preprocessor costs no
TensorFlow import until it runs, and the short jobs on strings
(`predict`, `encode`, fill-mask) never run it (`host_preprocessing`).
"""

import functools
import threading

import keras
import numpy as np

from keras_bert._compat.layer_tracking import take_raw_inputs
from keras_bert.preprocessing.tensorflow_modules import tf
from keras_bert.serialization import deserialize

_STATE = threading.local()


def _leaf_kinds(value, kinds):
    if isinstance(value, (list, tuple)):
        for item in value:
            _leaf_kinds(item, kinds)
    elif isinstance(value, (str, bytes)):
        kinds.add("string")
    elif isinstance(value, (bool, int, float, np.number)):
        kinds.add("number")
    else:
        kinds.add(type(value).__name__)
    return kinds


def _list_to_tf(value):
    kinds = _leaf_kinds(value, set())
    if len(kinds) > 1 or not kinds <= {"string", "number"}:
        raise TypeError(
            "Preprocessing inputs must be all strings or all numbers; got a "
            f"list mixing {sorted(kinds)}. Convert or drop the other values."
        )
    try:
        return tf.constant(value)
    except ValueError:  # rows of different lengths
        return tf.ragged.constant(value)


def convert_inputs(value):
    """Converts eager inputs to TF tensors; tuples and dicts keep structure.

    A `tuple` lists separate inputs (e.g. two text segments) while a `list`
    is data (a batch), as in keras-hub.
    """
    if value is None or isinstance(value, (tf.Tensor, tf.RaggedTensor)):
        return value
    if isinstance(value, dict):
        return {key: convert_inputs(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return tuple(convert_inputs(item) for item in value)
    if isinstance(value, (str, bytes)):
        return tf.constant(value)
    if isinstance(value, list):
        return _list_to_tf(value)
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "USO":
            return _list_to_tf(value.tolist())
        return tf.constant(value)
    if isinstance(value, (bool, int, float, np.number)):
        return tf.constant(value)
    if keras.ops.is_tensor(value):  # a jax.Array or torch.Tensor
        return tf.constant(keras.ops.convert_to_numpy(value))
    raise TypeError(
        f"Cannot use a value of type {type(value).__name__} as preprocessing "
        "input; pass strings, lists, NumPy arrays or tensors."
    )


def _decode(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return [_decode(item) for item in value]


def convert_outputs(value):
    """Converts eager TF outputs to the backend-facing forms (module doc)."""

    def convert(x):
        if isinstance(x, tf.RaggedTensor) or not isinstance(x, tf.Tensor):
            return x
        if x.dtype == tf.string:
            value = x.numpy()
            return _decode(value if isinstance(value, bytes) else value.tolist())
        if keras.config.backend() == "tensorflow":
            return x
        return keras.ops.convert_to_tensor(x.numpy())

    return keras.tree.map_structure(convert, value)


def tf_preprocessing(method):
    """Runs `method` as TF graph code, converting only at the eager boundary.

    Nested calls (a preprocessor calling its tokenizer) skip the conversion:
    only the outermost call converts inputs and outputs.
    """

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        outermost = tf.executing_eagerly() and not getattr(_STATE, "depth", 0)
        if not outermost:
            return method(self, *args, **kwargs)
        args = tuple(convert_inputs(arg) for arg in args)
        kwargs = {key: convert_inputs(arg) for key, arg in kwargs.items()}
        _STATE.depth = 1
        try:
            with tf.device("CPU"):
                outputs = method(self, *args, **kwargs)
        finally:
            _STATE.depth = 0
        return convert_outputs(outputs)

    return wrapper


class PreprocessingLayer(keras.layers.Layer):
    """A Keras layer whose `call` is TF graph code under every backend.

    Subclasses decorate their public entry points (`call`, `tokenize`, ...)
    with `tf_preprocessing`. The layer has no weights and is built on
    construction.

    Args:
        **kwargs: standard `keras.layers.Layer` arguments (e.g. `name`).
    """

    # Constructor arguments that are Keras objects themselves (a tokenizer):
    # `get_config` serializes them and `from_config` rebuilds them.
    nested_config_keys = ()

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        # Keras must not turn TF string/ragged tensors into backend tensors.
        take_raw_inputs(self)
        self.built = True

    def get_config(self):
        config = super().get_config()
        for key in self.nested_config_keys:
            config[key] = keras.saving.serialize_keras_object(
                getattr(self, key)
            )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for key in cls.nested_config_keys:
            if isinstance(config.get(key), dict):
                config[key] = deserialize(config[key])
        return cls(**config)

    def compute_output_spec(self, *args, **kwargs):
        raise NotImplementedError(
            f"{self.__class__.__name__} runs on TF tensors (eagerly, in "
            "tf.data or in a tf.function); it cannot be called on symbolic "
            "Keras inputs. Apply it to the data pipeline, not in a Functional "
            "model."
        )
