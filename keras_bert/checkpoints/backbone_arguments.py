"""`BertBackbone` arguments read from a file, checked before any variable
is made.

A config file is written by someone else: a `vocab_size` of 10^10 or a
`hidden_size` of 10^6 would otherwise reach the backend's allocator (a
`ResourceExhaustedError` after seconds, a 160-petabyte request, or gigabytes
of swap) and a dict where a name belongs a `TypeError` from deep inside
Keras. Each value is checked for its type and a range no BERT leaves, and
the error names the field as the file spells it, with its value.
`weight_dimensions` then checks the sizes against the weight file.
"""

import math

from keras_bert.checkpoints.checkpoint_error import CheckpointError
from keras_bert.checkpoints.known_checkpoints import parameter_count
from keras_bert.layers.activations import SUPPORTED_ACTIVATIONS

# Upper bounds, far above every released BERT (the largest vocabulary,
# XLM-R's, has 250,002 rows; BERT-large is 1,024 wide with 24 blocks of
# 4,096; positions rarely pass 8,192) and below sizes that exhaust a
# machine before anything is checked.
INTEGER_BOUNDS = {
    "vocabulary_size": 2**22,
    "num_layers": 2**8,
    "num_heads": 2**9,
    "hidden_dim": 2**15,
    "intermediate_dim": 2**17,
    "max_sequence_length": 2**16,
    "num_segments": 2**10,
}
# A task's head sizes in a preset (a Dense of hidden x num_classes).
TASK_BOUNDS = {"num_classes": 2**20, "num_choices": 2**10}
# About 68 GB of float32 weights: more than any BERT, less than a config
# could otherwise ask of the allocator with every field in range.
MAX_PARAMETERS = 2**34
FLOAT_RANGES = {
    # name: (lowest, highest, whether `highest` itself is allowed)
    "dropout": (0.0, 1.0, False),
    "attention_dropout": (0.0, 1.0, False),
    "layer_norm_epsilon": (0.0, 1.0, True),
    "initializer_range": (0.0, 1.0, True),
}
BOOLEANS = ("normalize_first", "output_hidden_states", "output_attentions")


def _is_integer(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _refusal(arguments, source, names):
    def refuse(name, expected):
        value = arguments[name]
        return CheckpointError(
            f"{source}: {names.get(name, name)}={value!r:.80} is {expected}; "
            "the file is corrupt or not a BERT config, so nothing was "
            "built.")

    return refuse


def check_whole_numbers(arguments, bounds, source, names=None):
    """Raises `CheckpointError` unless each of `bounds`' arguments present
    is a whole number from 1 to its bound (e.g. `TASK_BOUNDS` for a task's
    `num_classes`)."""
    refuse = _refusal(arguments, source, names or {})
    for name, bound in bounds.items():
        if name not in arguments:
            continue
        if not _is_integer(arguments[name]):
            raise refuse(name, "not a whole number")
        if not 1 <= arguments[name] <= bound:
            raise refuse(name, f"out of range (1 to {bound:,})")


def check_backbone_arguments(arguments, source, names=None):
    """Raises `CheckpointError` for a value `BertBackbone` cannot take.

    Args:
        arguments: dict. `BertBackbone` keyword arguments, as read.
        source: str. The file (and key) they came from, for the message.
        names: dict or None. Argument name -> the field's name in the file
            (e.g. "vocabulary_size" -> "vocab_size"), when they differ.

    Example:
    >>> try:
    ...     check_backbone_arguments({"hidden_dim": 10**6}, "config.json",
    ...                              {"hidden_dim": "hidden_size"})
    ... except CheckpointError as error:
    ...     print(error)
    config.json: hidden_size=1000000 is out of range (1 to 32,768); ...
    """
    names = names or {}
    refuse = _refusal(arguments, source, names)
    check_whole_numbers(arguments, INTEGER_BOUNDS, source, names)
    for name, (low, high, closed) in FLOAT_RANGES.items():
        value = arguments.get(name)
        if value is None:
            continue
        if not _is_number(value) or not math.isfinite(value):
            raise refuse(name, "not a number")
        if value < low or value > high or (value == high and not closed):
            raise refuse(name, f"out of range ({low} to {high}"
                         + (")" if closed else ", exclusive)"))
    for name in BOOLEANS:
        if not isinstance(arguments.get(name, False), bool):
            raise refuse(name, "not true or false")
    activation = arguments.get("activation", "gelu")
    if not isinstance(activation, str) or (
            activation not in SUPPORTED_ACTIVATIONS):
        raise refuse("activation",
                     f"not one of {', '.join(SUPPORTED_ACTIVATIONS)}")
    hidden, heads = arguments.get("hidden_dim"), arguments.get("num_heads")
    if hidden and heads and hidden % heads:
        hidden_name = names.get("hidden_dim", "hidden_dim")
        raise refuse("num_heads", f"not a divisor of {hidden_name}={hidden}")
    if all(name in arguments for name in (
            "vocabulary_size", "hidden_dim", "intermediate_dim",
            "num_layers")) and parameter_count(**arguments) > MAX_PARAMETERS:
        raise CheckpointError(
            f"{source} describes a model of "
            f"{parameter_count(**arguments):,} weights, more than "
            f"{MAX_PARAMETERS:,} (no BERT comes near); nothing was built.")
