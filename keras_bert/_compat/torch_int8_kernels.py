"""keras_bert's kernels for Keras' int8 inference on PyTorch, in place only
while a keras_bert model runs, and only on the thread that runs it.

Keras' quantized `Dense` and `EinsumDense` multiply and quantize through
functions of its PyTorch backend that it looks up at every call: `matmul`,
`einsum` and `transpose` of `keras.src.backend.torch.numpy`,
`keras.src.quantizers.quantizers.abs_max_quantize` and
`keras.src.backend.torch.core.custom_gradient`. Keras has no public hook
for a layer's int8 product, so `keras_functions_replaced` puts keras_bert's
versions (`keras_bert.torch_int8`) in their place for the duration of a
`with` block, behind a dispatcher that runs them on the thread inside the
block and Keras' own on every other thread; the block's end puts Keras'
functions back. Models that are not keras_bert's run Keras' functions.

Checked on Keras 3.13.0 (the floor) and 3.15.1 with PyTorch 2.13.0;
present since Keras 3.10.0. Fallback, where a release moved any of them
(`keras_functions` finds one missing): the block changes nothing, and
Keras' own int8 path runs (slower, the same results).
"""

import contextlib
import importlib
import threading

# Where each function lives in Keras.
_LOCATIONS = {
    "matmul": "keras.src.backend.torch.numpy",
    "einsum": "keras.src.backend.torch.numpy",
    "transpose": "keras.src.backend.torch.numpy",
    "abs_max_quantize": "keras.src.quantizers.quantizers",
    "custom_gradient": "keras.src.backend.torch.core",
}

_lock = threading.Lock()
_this_thread = threading.local()
# Installed dispatchers, how many blocks hold them, Keras' originals.
_installed = {"holders": 0, "originals": None}


def keras_functions():
    """{name: Keras' function} for the names above (its own, also while
    keras_bert's are in place), or None where Keras has moved any of them
    (PyTorch backend only)."""
    with _lock:
        return _keras_functions()


def _keras_functions():
    if _installed["originals"] is not None:
        return dict(_installed["originals"])
    functions = {}
    for name, module_name in _LOCATIONS.items():
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            return None
        if not callable(getattr(module, name, None)):
            return None
        functions[name] = getattr(module, name)
    return functions


def keras_original(name):
    """Keras' own function `name`, also while keras_bert's is in place."""
    originals = _installed["originals"]
    if originals is not None:
        return originals[name]
    return getattr(importlib.import_module(_LOCATIONS[name]), name)


@contextlib.contextmanager
def keras_functions_replaced(replacements):
    """Within the block, on this thread, Keras' PyTorch backend runs
    `replacements[name]` instead of each function named in it.

    Args:
        replacements: dict {name: function} over the names of
            `keras_functions()`, each taking that function's arguments.
    """
    if not _enter(replacements):
        yield
        return
    try:
        yield
    finally:
        _exit()


def _enter(replacements):
    with _lock:
        if _installed["holders"] == 0:
            originals = _keras_functions()
            if originals is None:
                return False
            _installed["originals"] = originals
            for name, original in originals.items():
                _set(name, _dispatcher(name, original))
        _installed["holders"] += 1
    _this_thread.replacements = replacements
    _this_thread.depth = getattr(_this_thread, "depth", 0) + 1
    return True


def _exit():
    _this_thread.depth -= 1
    with _lock:
        _installed["holders"] -= 1
        if _installed["holders"] == 0:
            for name, original in _installed["originals"].items():
                _set(name, original)
            _installed["originals"] = None


def _set(name, function):
    setattr(importlib.import_module(_LOCATIONS[name]), name, function)


def _dispatcher(name, original):
    def dispatch(*args, **kwargs):
        if getattr(_this_thread, "depth", 0):
            return _this_thread.replacements[name](*args, **kwargs)
        return original(*args, **kwargs)

    return dispatch
