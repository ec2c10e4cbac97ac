"""Activation lookup that accepts the names BERT checkpoints use.

Hugging Face configs say `"gelu"` for the exact erf GELU of the original
BERT, and `"gelu_new"` / `"gelu_pytorch_tanh"` for the tanh approximation.
Keeping the names as strings (not functions) keeps layer configs portable.
"""

import keras


def gelu_approximate(x):
    """GELU with the tanh approximation (GPT-2 / `gelu_new`)."""
    return keras.activations.gelu(x, approximate=True)


def gelu_exact(x):
    """GELU with the exact erf form, as in the original BERT."""
    return keras.activations.gelu(x, approximate=False)


_ALIASES = {
    "gelu": gelu_exact,
    "gelu_exact": gelu_exact,
    "gelu_approximate": gelu_approximate,
    "gelu_new": gelu_approximate,
    "gelu_pytorch_tanh": gelu_approximate,
    "gelu_fast": gelu_approximate,
    "relu": keras.activations.relu,
    "silu": keras.activations.silu,
    "swish": keras.activations.silu,
    "tanh": keras.activations.tanh,
}

SUPPORTED_ACTIVATIONS = tuple(sorted(_ALIASES))


def get_activation(name):
    """Returns the function for an activation name; a clear error otherwise."""
    if callable(name):
        return name
    try:
        return _ALIASES[name]
    except KeyError:
        raise ValueError(
            f"Unsupported activation {name!r}. Supported: "
            f"{', '.join(SUPPORTED_ACTIVATIONS)}."
        ) from None
