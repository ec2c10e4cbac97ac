"""A preset's `model.weights.h5`: the model's weights, never the optimizer's.

`model.save_weights` also writes a compiled model's optimizer state (two
AdamW moments per weight: a file three times the model's size) that a
preset, loaded for inference or a new fine-tuning run, never uses; and
`load_weights` then warns that a compiled model's optimizer found nothing
to load. Keras has no public switch for either
(`keras_bert._compat.weights_only` holds the private one).
"""

from keras_bert._compat.weights_only import load_model_weights
from keras_bert._compat.weights_only import save_model_weights


def save_preset_weights(model, path):
    save_model_weights(model, path)


def load_preset_weights(model, path):
    load_model_weights(model, path)
