"""Dropout that costs nothing outside training."""


def dropout(layer, inputs, training):
    """`layer(inputs, training=training)` when training, else `inputs`.

    A Keras `Dropout` is the identity outside training, but calling it
    still runs Keras' per-call work (argument binding, dtype and name
    scopes) on PyTorch, which runs eagerly and has no compiler to remove
    it; a 6-layer encoder calls dropout 13 times a forward
    (docs/performance.md, "Keras' per-call cost on PyTorch"). XLA drops
    the identity anyway, so JAX and TensorFlow run the same program as
    before.

    Args:
        layer: a `keras.layers.Dropout`.
        inputs: tensor.
        training: bool or None, as Keras passes it to `call`.
    """
    if training:
        return layer(inputs, training=training)
    return inputs
