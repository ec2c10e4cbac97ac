"""A layer's nested layers, and layers that take strings.

Keras keeps the layers a layer owns in a private list and walks it with
`Layer._flatten_layers`; its public `Model.layers` lists only the top
level, not the dense layers inside an encoder block. Checked on Keras
3.13.0 (the floor) and 3.15.1; present since 3.10.0.
"""

import keras


def flatten_layers(layer, include_self=True):
    """`layer` (if `include_self`) and every layer nested in it, in the
    order Keras tracked them, each once.

    Fallback, where `_flatten_layers` is gone: the same walk over the
    layer's attributes (lists, tuples and dicts of layers included).
    """
    if hasattr(layer, "_flatten_layers"):
        return list(layer._flatten_layers(include_self=include_self))
    found, seen = [], set()

    def visit(current):
        if id(current) in seen:
            return
        seen.add(id(current))
        found.append(current)
        for value in vars(current).values():
            for item in keras.tree.flatten(value):
                if isinstance(item, keras.layers.Layer):
                    visit(item)

    visit(layer)
    return found if include_self else found[1:]


def take_raw_inputs(layer):
    """Lets `layer` (a preprocessing layer) take strings and ragged
    tensors, positionally, as Keras passes them to its `call` unchanged.

    Keras' `Layer.__call__` converts its inputs to the backend's tensors
    and refuses non-tensors as positional arguments, under two private
    switches that keras-hub's preprocessing layers set the same way.
    Fallback, where they are gone: none is needed to build or save a
    layer; its inputs then go through Keras' conversion, which string
    inputs fail loudly (tests/preprocessing calls every preprocessing
    layer on strings, eagerly and in `tf.data`).
    """
    if hasattr(layer, "_convert_input_args"):
        layer._convert_input_args = False
    if hasattr(layer, "_allow_non_tensor_positional_args"):
        layer._allow_non_tensor_positional_args = True
