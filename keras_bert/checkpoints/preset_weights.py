"""A preset's `model.weights.h5`: the model's weights, never the optimizer's.

`model.save_weights` also writes a compiled model's optimizer state (two
AdamW moments per weight: a file three times the model's size) that a
preset, loaded for inference or a new fine-tuning run, never uses; and
`load_weights` then warns that a compiled model's optimizer found nothing
to load. Keras has no public switch for either, only `objects_to_skip` of
its weights-only saving functions.
"""

from keras.src.saving import saving_lib


def _optimizer_of(model):
    optimizer = getattr(model, "optimizer", None)
    return [optimizer] if optimizer is not None else None


def save_preset_weights(model, path):
    saving_lib.save_weights_only(model, path,
                                 objects_to_skip=_optimizer_of(model))


def load_preset_weights(model, path):
    saving_lib.load_weights_only(model, path,
                                 objects_to_skip=_optimizer_of(model))
