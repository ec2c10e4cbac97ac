"""BERT config files <-> `BertBackbone` constructor arguments.

Hugging Face `config.json` and Google's `bert_config.json` share field
names, so one function reads both. Every field that changes the numbers is
mapped; a field whose value keras_bert cannot reproduce is an error, never
silently dropped.
"""

from keras_bert.checkpoints.backbone_arguments import check_backbone_arguments
from keras_bert.checkpoints.checkpoint_error import CheckpointError

# Config activation name -> keras_bert activation name. "gelu" is the exact
# erf GELU in transformers and in the released Google checkpoints (trained
# with the erf form; a later revision of Google's modeling.py evaluates
# "gelu" with tanh, pass `activation="gelu_approximate"` to mimic it).
_ACTIVATIONS_IN = {
    "gelu": "gelu",
    "gelu_new": "gelu_approximate",
    "gelu_pytorch_tanh": "gelu_approximate",
    "gelu_fast": "gelu_approximate",
    "relu": "relu",
    "silu": "silu",
    "swish": "silu",
    "tanh": "tanh",
}
_ACTIVATIONS_OUT = {
    "gelu": "gelu",
    "gelu_exact": "gelu",
    "gelu_approximate": "gelu_new",
    "relu": "relu",
    "silu": "silu",
    "swish": "silu",
    "tanh": "tanh",
}

# Fields keras_bert does not implement, with the only value it can honour.
_UNSUPPORTED = {
    "position_embedding_type": "absolute",
    "is_decoder": False,
    "add_cross_attention": False,
}

_REQUIRED = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
)
# `BertBackbone` argument -> the config field, for error messages.
FIELD_NAMES = {
    "vocabulary_size": "vocab_size",
    "num_layers": "num_hidden_layers",
    "num_heads": "num_attention_heads",
    "hidden_dim": "hidden_size",
    "intermediate_dim": "intermediate_size",
    "dropout": "hidden_dropout_prob",
    "attention_dropout": "attention_probs_dropout_prob",
    "max_sequence_length": "max_position_embeddings",
    "num_segments": "type_vocab_size",
    "activation": "hidden_act",
    "layer_norm_epsilon": "layer_norm_eps",
    "initializer_range": "initializer_range",
}


def backbone_kwargs_from_bert_config(config, source="config.json"):
    """Maps a HF / Google BERT config dict to `BertBackbone` arguments.

    Every value is checked for its type and range before it is returned
    (`check_backbone_arguments`), so nothing is built from a config no
    BERT has.

    Args:
        config: dict. The parsed `config.json` or `bert_config.json`.
        source: str. The file name, used in error messages.

    Returns:
        A dict of `BertBackbone` keyword arguments.
    """
    if not isinstance(config, dict):
        raise CheckpointError(f"{source} holds no BERT config object.")
    missing = [key for key in _REQUIRED if key not in config]
    if missing:
        raise CheckpointError(
            f"{source} lacks the BERT fields {missing}; it has "
            f"{sorted(config)}. Is this a BERT config?"
        )
    for key, supported in _UNSUPPORTED.items():
        value = config.get(key, supported)
        if value != supported:
            raise CheckpointError(
                f"{source}: {key}={value!r} is not supported by keras_bert "
                f"(only {supported!r}). This checkpoint is not a plain BERT "
                "encoder; its outputs could not be reproduced."
            )
    hidden_act = config.get("hidden_act", "gelu")
    if not isinstance(hidden_act, str) or hidden_act not in _ACTIVATIONS_IN:
        raise CheckpointError(
            f"{source}: hidden_act={hidden_act!r:.80} is not supported. "
            f"Supported: {sorted(_ACTIVATIONS_IN)}."
        )
    dropout = config.get("hidden_dropout_prob", 0.1)
    kwargs = {
        "vocabulary_size": config["vocab_size"],
        "num_layers": config["num_hidden_layers"],
        "num_heads": config["num_attention_heads"],
        "hidden_dim": config["hidden_size"],
        "intermediate_dim": config["intermediate_size"],
        "dropout": dropout,
        "attention_dropout": config.get("attention_probs_dropout_prob",
                                        dropout),
        "max_sequence_length": config.get("max_position_embeddings", 512),
        "num_segments": config.get("type_vocab_size", 2),
        "activation": _ACTIVATIONS_IN[hidden_act],
        # Google's TF LayerNorm used 1e-12, and its config has no field.
        "layer_norm_epsilon": config.get("layer_norm_eps", 1e-12),
        "initializer_range": config.get("initializer_range", 0.02),
    }
    check_backbone_arguments(kwargs, source, FIELD_NAMES)
    return kwargs


def bert_config_from_backbone(backbone, architecture="BertModel",
                              extra=None):
    """The Hugging Face `config.json` dict describing a `BertBackbone`.

    Args:
        backbone: `keras_bert.BertBackbone`.
        architecture: str. The transformers class name to record.
        extra: dict or None. Further fields (e.g. `num_labels`).
    """
    if backbone.normalize_first:
        raise CheckpointError(
            "This backbone uses pre-norm blocks (normalize_first=True); "
            "Hugging Face BERT is post-norm, so it cannot be exported as "
            "model_type 'bert'."
        )
    if backbone.activation not in _ACTIVATIONS_OUT:
        raise CheckpointError(
            f"Activation {backbone.activation!r} has no Hugging Face name. "
            f"Exportable: {sorted(_ACTIVATIONS_OUT)}."
        )
    dropout = backbone.dropout
    attention_dropout = backbone.attention_dropout
    config = {
        "architectures": [architecture],
        "model_type": "bert",
        "vocab_size": backbone.vocabulary_size,
        "hidden_size": backbone.hidden_dim,
        "num_hidden_layers": backbone.num_layers,
        "num_attention_heads": backbone.num_heads,
        "intermediate_size": backbone.intermediate_dim,
        "hidden_act": _ACTIVATIONS_OUT[backbone.activation],
        "hidden_dropout_prob": dropout,
        "attention_probs_dropout_prob": (
            dropout if attention_dropout is None else attention_dropout
        ),
        "max_position_embeddings": backbone.max_sequence_length,
        "type_vocab_size": backbone.num_segments,
        "layer_norm_eps": backbone.layer_norm_epsilon,
        "initializer_range": backbone.initializer_range,
        "position_embedding_type": "absolute",
        "pad_token_id": 0,
        "tie_word_embeddings": True,
    }
    config.update(extra or {})
    return config
