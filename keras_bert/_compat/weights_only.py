"""A model's weights saved and loaded without its optimizer's.

`model.save_weights` also writes a compiled model's optimizer state, and
`load_weights` warns when a compiled model's optimizer finds none; Keras'
only switch for either is `objects_to_skip` of the private
`keras.src.saving.saving_lib` functions behind them. Checked on Keras
3.13.0 (the floor) and 3.15.1; present since 3.10.0.
"""

try:
    from keras.src.saving import saving_lib
except ImportError:  # a Keras without it: the public methods
    saving_lib = None


def _skips_objects():
    return saving_lib is not None and all(
        hasattr(saving_lib, name)
        for name in ("save_weights_only", "load_weights_only"))


def _optimizer_of(model):
    optimizer = getattr(model, "optimizer", None)
    return [optimizer] if optimizer is not None else None


def save_model_weights(model, path):
    """Writes `model`'s weights to `path` (`.weights.h5`), never its
    optimizer's.

    Fallback: `model.save_weights(path)`, which also writes a compiled
    model's optimizer state (about three times the model's size).
    """
    if _skips_objects():
        saving_lib.save_weights_only(model, path,
                                     objects_to_skip=_optimizer_of(model))
    else:
        model.save_weights(path)


def load_model_weights(model, path):
    """Reads `model`'s weights from `path`, leaving its optimizer as it is.

    Fallback: `model.load_weights(path)` (Keras warns that a compiled
    model's optimizer found nothing to load).
    """
    if _skips_objects():
        saving_lib.load_weights_only(model, path,
                                     objects_to_skip=_optimizer_of(model))
    else:
        model.load_weights(path)
