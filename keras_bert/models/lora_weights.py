"""LoRA adapters in a file of their own (`save_lora_weights`).

Rank-8 adapters and a classifier head of all-MiniLM-L6-v2 are 74,498
weights (a 300 kB file) where the model is 22.7 million (a 92 MB preset):
they travel alone and go back onto the base model they were trained on.
The file is safetensors: each adapter matrix under its block and role
(`transformer_layer_3/query_key_value/lora_kernel_a`), a task's own
weights (its heads) under `head/`, and metadata with the rank, alpha,
roles and the backbone's shape, all checked before a load changes
anything.
"""

import keras
import numpy as np

from keras_bert.checkpoints.weight_files import read_safetensors
from keras_bert.checkpoints.weight_files import read_safetensors_metadata
from keras_bert.checkpoints.saving import write_safetensors
from keras_bert.file_swap import staged_file
from keras_bert.models.lora import LORA_TARGETS
from keras_bert.models.lora import check_target_names
from keras_bert.models.lora import enable_lora
from keras_bert.models.lora import lora_targets

FORMAT = "keras_bert.lora"
SUFFIX = ".safetensors"
HEAD = "head/"


def save_lora_weights(model, filepath):
    """See `BertBackbone.save_lora_weights`."""
    backbone = getattr(model, "backbone", model)
    adapters = _adapted_layers(backbone)
    if not adapters:
        raise ValueError(
            f"This {type(model).__name__} has no LoRA adapters to save: "
            "call `backbone.enable_lora(rank)` and train first (to save the "
            "whole model, use `save_to_preset` or `model.save`).")
    _check_suffix(filepath)
    tensors = {}
    for key, layer in adapters.items():
        tensors[f"{key}/lora_kernel_a"] = _to_numpy(layer.lora_kernel_a)
        tensors[f"{key}/lora_kernel_b"] = _to_numpy(layer.lora_kernel_b)
    for key, variable in _head_variables(model).items():
        tensors[key] = _to_numpy(variable)
    rank, alpha, roles = _settings(adapters)
    metadata = {
        "format": FORMAT,
        "rank": str(rank),
        "lora_alpha": repr(alpha),
        "target_names": ",".join(roles),
        "num_layers": str(backbone.num_layers),
        "hidden_dim": str(backbone.hidden_dim),
        "saved_from": type(model).__name__,
    }
    with staged_file(filepath) as staging:
        write_safetensors(staging, tensors, metadata)


def load_lora_weights(model, filepath):
    """See `BertBackbone.load_lora_weights`."""
    backbone = getattr(model, "backbone", model)
    _check_suffix(filepath)
    rank, alpha, roles, shape, saved_from = _read_settings(filepath)
    if shape != (backbone.num_layers, backbone.hidden_dim):
        raise ValueError(
            f"{filepath} adapts a backbone of {shape[0]} layers and hidden "
            f"size {shape[1]}; this one has {backbone.num_layers} layers "
            f"and hidden size {backbone.hidden_dim}. Load it onto the "
            f"model it was trained from (saved from a {saved_from}).")
    adapters = _adapted_layers(backbone)
    current = _settings(adapters) if adapters else None
    if current and current != (rank, alpha, roles):
        raise ValueError(
            f"{filepath} holds LoRA of rank {rank}, alpha {alpha:g} on "
            f"{list(roles)}; this backbone already has rank {current[0]}, "
            f"alpha {current[1]:g} on {list(current[2])}. Load it onto a "
            "model without LoRA (the load enables it) or one enabled the "
            "same way.")
    expected = _expected_shapes(backbone, rank, roles)
    heads = {} if model is backbone else _head_variables(model)
    expected.update({key: tuple(v.shape) for key, v in heads.items()})
    tensors = read_safetensors(filepath)
    # A backbone takes the adapters of a task's file and leaves its heads.
    stored = {key: value for key, value in tensors.items()
              if model is not backbone or not key.startswith(HEAD)}
    _check_tensors(filepath, stored, expected, saved_from)

    if not adapters:
        enable_lora(backbone, rank, target_names=roles, lora_alpha=alpha)
        adapters = _adapted_layers(backbone)
    targets = {f"{key}/lora_kernel_{ab}": getattr(layer, f"lora_kernel_{ab}")
               for key, layer in adapters.items() for ab in "ab"}
    targets.update(heads)
    for key, variable in targets.items():
        # A copy: the file is memory-mapped read-only.
        variable.assign(keras.ops.cast(np.array(stored[key]), variable.dtype))


def _read_settings(filepath):
    """(rank, alpha, roles, (num_layers, hidden_dim), saved_from) of a
    LoRA file, from its safetensors metadata."""
    metadata = read_safetensors_metadata(filepath)
    if metadata.get("format") != FORMAT:
        raise ValueError(
            f"{filepath} is not a keras_bert LoRA file (its metadata "
            f"'format' is {metadata.get('format')!r}, expected {FORMAT!r}); "
            "write one with `save_lora_weights`.")
    try:
        return (int(metadata["rank"]), float(metadata["lora_alpha"]),
                check_target_names(metadata["target_names"].split(",")),
                (int(metadata["num_layers"]), int(metadata["hidden_dim"])),
                metadata.get("saved_from", "model"))
    except (KeyError, ValueError) as error:
        raise ValueError(
            f"{filepath}: unreadable LoRA metadata ({error!r}).") from None


def _check_suffix(filepath):
    if not str(filepath).endswith(SUFFIX):
        raise ValueError(
            f"LoRA weights are a safetensors file: name it "
            f"'*.lora{SUFFIX}' (got {str(filepath)!r}).")


def _adapted_layers(backbone):
    """`lora_targets`' entries of the layers with LoRA on."""
    return {key: layer
            for key, layer in lora_targets(backbone, LORA_TARGETS).items()
            if getattr(layer, "lora_enabled", False)}


def _settings(adapters):
    """(rank, alpha, roles) of `_adapted_layers`' result."""
    first = next(iter(adapters.values()))
    roles = tuple(role for role in LORA_TARGETS
                  if f"transformer_layer_0/{role}" in adapters)
    return first.lora_rank, float(first.lora_alpha), roles


def _expected_shapes(backbone, rank, roles):
    # Keras' adapters: A is the kernel's shape with its last axis replaced
    # by the rank, B is (rank, the kernel's last axis).
    shapes = {}
    for key, layer in lora_targets(backbone, roles).items():
        kernel = tuple(layer.kernel.shape)
        shapes[f"{key}/lora_kernel_a"] = kernel[:-1] + (rank,)
        shapes[f"{key}/lora_kernel_b"] = (rank, kernel[-1])
    return shapes


def _head_variables(model):
    """{"head/<path>": variable} of a task's weights outside its backbone."""
    backbone = getattr(model, "backbone", None)
    if backbone is None:
        return {}
    inside = {id(v) for v in backbone.weights}
    return {HEAD + v.path: v for v in model.weights if id(v) not in inside}


def _check_tensors(filepath, stored, expected, saved_from):
    missing = sorted(set(expected) - set(stored))
    unexpected = sorted(set(stored) - set(expected))
    wrong = [f"{key} {tuple(stored[key].shape)} (expected {expected[key]})"
             for key in sorted(set(stored) & set(expected))
             if tuple(stored[key].shape) != expected[key]]
    problems = []
    if missing:
        problems.append(f"missing {_some(missing)}")
    if unexpected:
        problems.append(f"not in this model {_some(unexpected)}")
    if wrong:
        problems.append(f"wrong shape {_some(wrong)}")
    if problems:
        raise ValueError(
            f"{filepath} (saved from a {saved_from}) does not fit this "
            f"model: {'; '.join(problems)}. Nothing was loaded.")


def _some(names, shown=4):
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def _to_numpy(variable):
    # float32 in the file whatever the policy: safetensors' NumPy writer
    # has no bfloat16, and the adapters are float32 anyway.
    return np.ascontiguousarray(
        keras.ops.convert_to_numpy(keras.ops.cast(variable, "float32")))
