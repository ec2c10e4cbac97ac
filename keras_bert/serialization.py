"""Deserializing keras_bert objects whose module may not be imported yet.

`import keras_bert` loads the TensorFlow-backed classes (tokenizers,
preprocessors) on first use, and Keras only finds a custom class once its
module has run `register_keras_serializable`. A saved config names that
module; importing it before deserializing makes any `.keras` file or preset
load after a bare `import keras_bert`, in a fresh process.
"""

import importlib

import keras


def import_config_module(config):
    """Imports the keras_bert module a serialized `config` names, if any."""
    module = config.get("module") or ""
    if module.startswith("keras_bert."):
        importlib.import_module(module)
    return config


def deserialize(config):
    """`keras.saving.deserialize_keras_object` for keras_bert objects."""
    return keras.saving.deserialize_keras_object(import_config_module(config))
