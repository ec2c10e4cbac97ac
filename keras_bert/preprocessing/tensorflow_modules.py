"""TensorFlow and tensorflow-text for the preprocessing layers, imported on
first use.

The layers' graph code needs TensorFlow, but building a layer (a model's
`from_preset` attaching its preprocessor) does not, and under JAX or
PyTorch importing TensorFlow is most of a one-line command's start
(docs/performance.md, "Cold start"). `tf` and `tf_text` here stand for the
two modules and import them when an attribute is first read; the
preprocessing modules use them as they would the modules themselves.
"""

import importlib

import keras


class DeferredModule:
    """A module imported when one of its attributes is first read.

    Args:
        name: str. The module's import name.
        on_import: callable or None. Called with the module once, right
            after it is imported.

    Example:
    >>> json = DeferredModule("json")
    >>> json.dumps([1])
    '[1]'
    """

    def __init__(self, name, on_import=None):
        self._name = name
        self._on_import = on_import
        self._module = None

    def __getattr__(self, attribute):
        # Only reached for attributes the instance lacks: the module's.
        if self._module is None:
            module = importlib.import_module(self._name)
            if self._on_import is not None:
                self._on_import(module)
            self._module = module
        return getattr(self._module, attribute)

    def __repr__(self):
        state = "imported" if self._module is not None else "not imported"
        return f"<DeferredModule {self._name!r} ({state})>"


def _keep_off_accelerators(module):
    """Under JAX or PyTorch, TensorFlow only runs string ops here: keep it
    off the GPUs so that it reserves no memory JAX or PyTorch need.
    (`module`, TensorFlow or tensorflow-text, has imported TensorFlow.)"""
    if keras.config.backend() == "tensorflow":
        return
    try:
        importlib.import_module("tensorflow").config.set_visible_devices(
            [], "GPU")
    except RuntimeError:  # TF devices were already initialized by the user.
        pass


tf = DeferredModule("tensorflow", on_import=_keep_off_accelerators)
tf_text = DeferredModule("tensorflow_text", on_import=_keep_off_accelerators)
