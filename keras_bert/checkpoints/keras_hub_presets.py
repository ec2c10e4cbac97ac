"""keras-hub BERT preset directories -> canonical (HF-named) tensors.

`keras_hub` `save_to_preset` writes `config.json` (the Keras-serialized
`keras_hub>BertBackbone`), `model.weights.h5`, `tokenizer.json` (the
serialized keras-hub tokenizer's settings, not a Hugging Face tokenizers
file), `assets/tokenizer/vocabulary.txt` and `metadata.json`; a task adds
`task.json`, `task.weights.h5` and `preprocessor.json`.

keras-hub itself rebuilds its model from those files (it owns the layout
of its weight files). Its variables are then renamed by their paths, made
of keras-hub's public layer names (`transformer_layer_0/
self_attention_layer/query/kernel`), to the canonical names of
`name_mapping`, so `load_state_into_model` checks shapes, lists missing and
unexpected weights and assigns everything or nothing, as for HF tensors.
A variable with no canonical name is passed on under its own path, so it is
reported as unexpected rather than dropped.
"""

import logging
import os
import re

import numpy as np

from keras_bert.checkpoints import checkpoint_files as files
from keras_bert.checkpoints.backbone_arguments import check_backbone_arguments
from keras_bert.checkpoints.checkpoint_error import CheckpointError
from keras_bert.checkpoints.weight_dimensions import h5_shapes

logger = logging.getLogger("keras_bert.checkpoints")

TASK_CONFIG_FILE = "task.json"
TASK_WEIGHTS_FILE = "task.weights.h5"
_TEXT_CLASSIFIERS = ("keras_hub>BertTextClassifier",
                     "keras_nlp>BertClassifier",
                     "keras_nlp>BertTextClassifier")

# keras-hub's BertBackbone config fields, named as keras_bert's arguments.
_CONFIG_FIELDS = ("vocabulary_size", "num_layers", "num_heads", "hidden_dim",
                  "intermediate_dim", "dropout", "max_sequence_length",
                  "num_segments")
_OPTIONAL_FIELDS = {"max_sequence_length", "num_segments", "dropout"}
# Stored by every Keras layer; the dtype is resolved at load time, as
# keras-hub itself does (float weights load in the current Keras policy).
_IGNORED_FIELDS = {"name", "trainable", "dtype"}
# What keras-hub's BertBackbone fixes in code rather than in its config.
_FIXED = {
    "activation": "gelu_approximate",
    "layer_norm_epsilon": 1e-12,
    "initializer_range": 0.02,
}


def backbone_kwargs_from_keras_hub_config(config, source="config.json"):
    """`BertBackbone` arguments from a keras-hub `BertBackbone` config.

    Args:
        config: dict. The parsed `config.json` (a Keras-serialized object).
        source: str. The file name, used in error messages.
    """
    inner = config.get("config", {})
    dtype = inner.get("dtype")
    if isinstance(dtype, dict) and dtype.get("class_name") != "DTypePolicy":
        raise CheckpointError(
            f"{source}: dtype is a {dtype.get('class_name')} (a quantized "
            "keras-hub model); keras_bert loads float presets only (one "
            "saved before `quantize()`)."
        )
    unknown = sorted(set(inner) - set(_CONFIG_FIELDS) - _IGNORED_FIELDS)
    if unknown:
        raise CheckpointError(
            f"{source}: keras_bert cannot map the keras-hub BertBackbone "
            f"fields {unknown}; its outputs could not be reproduced."
        )
    missing = sorted(set(_CONFIG_FIELDS) - _OPTIONAL_FIELDS - set(inner))
    if missing:
        raise CheckpointError(
            f"{source} lacks the keras-hub BertBackbone fields {missing}; it"
            f" has {sorted(inner)}."
        )
    kwargs = {k: v for k, v in inner.items() if k in _CONFIG_FIELDS}
    # keras-hub's attention dropout is its `dropout`.
    kwargs["attention_dropout"] = kwargs.get("dropout", 0.1)
    kwargs = {**kwargs, **_FIXED}
    # Before keras-hub builds its model from the same config.
    check_backbone_arguments(kwargs, source)
    return kwargs


def _copy(value):
    return value


def _transpose(value):
    # A Keras Dense kernel is (in, out); the canonical nn.Linear is (out, in).
    return value.T


def _heads_in(value):
    # EinsumDense (hidden, heads, head_dim) -> (heads * head_dim, hidden);
    # its bias (heads, head_dim) flattens to (heads * head_dim,).
    if value.ndim == 2:
        return value.reshape(-1)
    return value.reshape(value.shape[0], -1).T


def _heads_out(value):
    # EinsumDense (heads, head_dim, hidden) -> (hidden, heads * head_dim).
    return value.reshape(-1, value.shape[-1]).T


# keras-hub variable name -> canonical parameter name.
_LEAF = {"embeddings": "weight", "kernel": "weight", "bias": "bias",
         "gamma": "weight", "beta": "bias"}
_BLOCK = r"transformer_layer_(\d+)/"
# (path pattern, canonical prefix, converter). The last group of a pattern is
# the variable name; the others fill the prefix's `{}`s.
_RULES = (
    (r"token_embedding/(embeddings)", "embeddings.word_embeddings", _copy),
    (r"position_embedding/(embeddings)", "embeddings.position_embeddings",
     _copy),
    (r"segment_embedding/(embeddings)", "embeddings.token_type_embeddings",
     _copy),
    (r"embeddings_layer_norm/(gamma|beta)", "embeddings.LayerNorm", _copy),
    (r"pooled_dense/(kernel|bias)", "pooler.dense", _transpose),
    (r"logits/(kernel|bias)", "classifier", _transpose),
    (_BLOCK + r"self_attention_layer/(query|key|value)/(kernel|bias)",
     "encoder.layer.{}.attention.self.{}", _heads_in),
    (_BLOCK + r"self_attention_layer/attention_output/(kernel)",
     "encoder.layer.{}.attention.output.dense", _heads_out),
    (_BLOCK + r"self_attention_layer/attention_output/(bias)",
     "encoder.layer.{}.attention.output.dense", _copy),
    (_BLOCK + r"self_attention_layer_norm/(gamma|beta)",
     "encoder.layer.{}.attention.output.LayerNorm", _copy),
    (_BLOCK + r"feedforward_intermediate_dense/(kernel|bias)",
     "encoder.layer.{}.intermediate.dense", _transpose),
    (_BLOCK + r"feedforward_output_dense/(kernel|bias)",
     "encoder.layer.{}.output.dense", _transpose),
    (_BLOCK + r"feedforward_layer_norm/(gamma|beta)",
     "encoder.layer.{}.output.LayerNorm", _copy),
)


def _canonical(path):
    """(canonical name, converter) for a keras-hub variable path, or None."""
    for pattern, prefix, convert in _RULES:
        # A nested model's variables may carry its name in front.
        match = re.fullmatch(r"(?:.*/)?" + pattern, path)
        if match:
            *names, leaf = match.groups()
            return f"{prefix.format(*names)}.{_LEAF[leaf]}", convert
    return None


def keras_hub_state(model):
    """Canonical-named float32 arrays from a keras-hub BERT model's variables.

    Returns `(state, origins)` as the `name_mapping` functions do; a
    variable without a canonical name keeps its path as its key.
    """
    import keras

    state, origins = {}, {}
    for variable in model.weights:
        value = np.asarray(keras.ops.convert_to_numpy(variable),
                           dtype="float32")
        mapped = _canonical(variable.path)
        key, value = (variable.path, value) if mapped is None else (
            mapped[0], mapped[1](value))
        if key in state:
            raise CheckpointError(
                f"keras-hub variables {origins[key]} and {variable.path} "
                f"both map to {key}."
            )
        state[key], origins[key] = value, variable.path
    return state, origins


def _task_config(path):
    """task.json when it holds a BertTextClassifier with weights, else None."""
    task_file = os.path.join(path, TASK_CONFIG_FILE)
    if not os.path.isfile(task_file):
        return None
    config = files.read_json(task_file)
    name = config.get("registered_name")
    has_weights = os.path.isfile(os.path.join(path, TASK_WEIGHTS_FILE))
    if name in _TEXT_CLASSIFIERS and has_weights:
        return config
    logger.info(
        "%s holds a keras-hub %s%s; keras_bert loads its backbone only (task"
        " heads are read from a BertTextClassifier's %s).", task_file, name,
        "" if has_weights else f" without {TASK_WEIGHTS_FILE}",
        TASK_WEIGHTS_FILE)
    return None


def _load_keras_hub_model(path, task_config):
    import keras_hub

    if task_config is None:
        return keras_hub.models.BertBackbone.from_preset(path)
    activation = task_config["config"].get("activation")
    if activation not in (None, "linear"):
        logger.warning(
            "%s: the keras-hub classifier applies activation %r to its "
            "outputs; keras_bert's BertClassifier returns logits.",
            os.path.join(path, TASK_CONFIG_FILE), activation)
    # No preprocessor: keras_bert builds its own from the same files.
    return keras_hub.models.BertTextClassifier.from_preset(
        path, preprocessor=None)


def read_keras_hub_preset(path, load_weights=True):
    """`BertBackbone` arguments and canonical tensors of a keras-hub preset.

    Returns `(config, state, origins)` like `loading.read_bert_checkpoint`:
    the state holds the encoder and pooler, plus `classifier.*` when the
    directory is a `BertTextClassifier` task preset with its head weights.
    """
    config_file = os.path.join(path, "config.json")
    config = files.read_json(config_file)
    kwargs = backbone_kwargs_from_keras_hub_config(config, config_file)
    if not load_weights:
        return kwargs, {}, {}
    # Before keras-hub reads them: no dataset may keep its data elsewhere.
    h5_shapes(files.preset_weights_file(path, "keras-hub preset"))
    task_config = _task_config(path)
    if task_config is not None:
        h5_shapes(os.path.join(path, TASK_WEIGHTS_FILE))
    try:
        model = _load_keras_hub_model(path, task_config)
    except (OSError, ValueError, KeyError) as error:
        raise CheckpointError(
            f"keras-hub could not rebuild the preset in {path}: {error}"
        ) from error
    state, origins = keras_hub_state(model)
    return kwargs, state, origins
