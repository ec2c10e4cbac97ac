"""Canonical (HF-named) tensors <-> keras_bert variables, both directions.

`weight_groups(model)` lists, for a backbone or a task model, every keras
variable with the checkpoint names it comes from and the two conversion
functions. Layers are found by their public names (`embeddings`,
`transformer_layer_{i}`, `pooler`, and the head names of the model's task
record, such as `mlm_head`), so the converter does not depend on how the
model is wired internally.
"""

import collections
import logging

import keras
import numpy as np

from keras_bert.checkpoints.checkpoint_error import CheckpointError
from keras_bert.layers.masked_lm_head import MaskedLMHead
from keras_bert.tasks.registry import record_of_model
from keras_bert.tasks.registry import task_records

logger = logging.getLogger("keras_bert.checkpoints")

# One keras variable <- one or more checkpoint tensors.
_Spec = collections.namedtuple("_Spec", "variable keys to_keras to_hf")
# `base`: part of the BERT encoder (prefixed `bert.` in HF task models).
# `required`: strict loading needs it; optional groups (pooler, heads) are
# loaded when the checkpoint has them and otherwise keep their init.
_Group = collections.namedtuple("_Group", "name specs base required")

# An MLM decoder stored apart from the word embeddings (which keras_bert
# ties to them): under a head's prefix, yet unexpected wherever it is.
UNTIED_DECODER = "cls.predictions.decoder."


def _copy_in(tensors):
    return tensors[0]


def _copy_out(value):
    return [value]


def _transpose_in(tensors):
    # nn.Linear stores (out, in); a Keras Dense kernel is (in, out).
    # Transposing a 1-D bias is a no-op, so biases share this path.
    return tensors[0].T


def _transpose_out(value):
    return [value.T]


def _fuse_in(tensors):
    # keras_bert's fused QKV kernel is (in, 3, out) and its bias (3, out):
    # q, k and v stacked on the axis before the output features.
    shapes = {t.shape for t in tensors}
    if len(shapes) != 1:
        raise ValueError(f"query/key/value shapes differ: {sorted(shapes)}")
    return np.stack([t.T for t in tensors], axis=-2)


def _fuse_out(value):
    return [value[..., part, :].T for part in range(3)]


_COPY = (_copy_in, _copy_out)
_TRANSPOSE = (_transpose_in, _transpose_out)
_FUSE = (_fuse_in, _fuse_out)


def _dense(layer, prefix):
    return [
        _Spec(layer.kernel, (f"{prefix}.weight",), *_TRANSPOSE),
        _Spec(layer.bias, (f"{prefix}.bias",), *_TRANSPOSE),
    ]


def _layer_norm(layer, prefix):
    return [
        _Spec(layer.gamma, (f"{prefix}.weight",), *_COPY),
        _Spec(layer.beta, (f"{prefix}.bias",), *_COPY),
    ]


def _encoder_specs(backbone):
    embeddings = backbone.get_layer("embeddings")
    specs = [
        _Spec(embeddings.token_embedding.embeddings,
              ("embeddings.word_embeddings.weight",), *_COPY),
        _Spec(embeddings.segment_embedding.embeddings,
              ("embeddings.token_type_embeddings.weight",), *_COPY),
        _Spec(embeddings.position_embeddings,
              ("embeddings.position_embeddings.weight",), *_COPY),
        *_layer_norm(embeddings.layer_norm, "embeddings.LayerNorm"),
    ]
    for i in range(backbone.num_layers):
        block = backbone.get_layer(f"transformer_layer_{i}")
        prefix = f"encoder.layer.{i}"
        qkv = block.attention.query_key_value
        parts = [f"{prefix}.attention.self.{p}" for p in ("query", "key",
                                                           "value")]
        specs += [
            _Spec(qkv.kernel, tuple(f"{p}.weight" for p in parts), *_FUSE),
            _Spec(qkv.bias, tuple(f"{p}.bias" for p in parts), *_FUSE),
            *_dense(block.attention.output_dense,
                    f"{prefix}.attention.output.dense"),
            *_layer_norm(block.attention_layer_norm,
                         f"{prefix}.attention.output.LayerNorm"),
            *_dense(block.intermediate_dense, f"{prefix}.intermediate.dense"),
            *_dense(block.output_dense, f"{prefix}.output.dense"),
            *_layer_norm(block.output_layer_norm, f"{prefix}.output.LayerNorm"),
        ]
    return specs


def find_layer(model, name):
    """`model.get_layer(name)`, or None when the model has no such layer."""
    try:
        return model.get_layer(name)
    except ValueError:
        return None


def _masked_lm(layer, prefix):
    return [
        *_dense(layer.transform_dense, f"{prefix}.transform.dense"),
        *_layer_norm(layer.transform_layer_norm,
                     f"{prefix}.transform.LayerNorm"),
        _Spec(layer.output_bias, (f"{prefix}.bias",), *_COPY),
    ]


def _head(layer, prefix):
    """A head's specs: transformers' `cls.predictions` for a
    `MaskedLMHead`, an `nn.Linear` for a Dense head."""
    if isinstance(layer, MaskedLMHead):
        return _masked_lm(layer, prefix)
    return _dense(layer, prefix)


def _is_head_key(key):
    """Whether a checkpoint key belongs to the head of some registered
    task: unused (not unexpected) when the model lacks that head."""
    prefixes = tuple(f"{prefix}." for record in task_records()
                     for prefix in record.heads.values())
    return key.startswith(prefixes) and not key.startswith(UNTIED_DECODER)


def weight_groups(model):
    """The variable groups of a `BertBackbone` or a task model built on
    one: the encoder, the pooler, and the heads its task record names."""
    backbone = getattr(model, "backbone", model)
    if getattr(backbone, "normalize_first", False):
        raise CheckpointError(
            "Pre-norm backbones (normalize_first=True) have no BERT "
            "checkpoint equivalent."
        )
    groups = [
        _Group("encoder", _encoder_specs(backbone), True, True),
        _Group("pooler", _dense(backbone.get_layer("pooler"), "pooler.dense"),
               True, False),
    ]
    record = record_of_model(model)
    for name, prefix in (record.heads if record else {}).items():
        layer = find_layer(model, name)
        if layer is not None:
            groups.append(_Group(name, _head(layer, prefix), False, False))
    return groups


def _format_keys(keys, origins):
    return "\n".join(f"  {origins.get(k, k)}" for k in keys)


def _match(model, state):
    """The specs the checkpoint can fill, missing keys, absent groups."""
    specs, missing, skipped = [], [], []
    for group in weight_groups(model):
        keys = [key for spec in group.specs for key in spec.keys]
        if not group.required and not any(key in state for key in keys):
            skipped.append(group.name)
            continue
        missing += [key for key in keys if key not in state]
        specs += [spec for spec in group.specs
                  if all(key in state for key in spec.keys)]
    return specs, missing, skipped


def _convert(specs, state, origins, message):
    """Keras-layout arrays for `specs`; one error listing every mismatch."""
    values, mismatches = [], []
    for spec in specs:
        tensors = [np.asarray(state[key], "float32") for key in spec.keys]
        expected = tuple(spec.variable.shape)
        try:
            value = spec.to_keras(tensors)
        except ValueError as error:
            value, expected = None, f"{expected} ({error})"
        if value is None or value.shape != expected:
            found = ", ".join(f"{origins.get(k, k)} {t.shape}"
                              for k, t in zip(spec.keys, tensors))
            mismatches.append(f"  {spec.variable.path}: model shape "
                              f"{expected}, checkpoint {found}")
        values.append(value)
    if mismatches:
        raise CheckpointError(message + "\n" + "\n".join(mismatches))
    return values


def load_state_into_model(model, state, origins=None, strict=True,
                          source="checkpoint"):
    """Assigns canonical-named tensors to a model's variables.

    Everything is converted and checked before the first assignment, so a
    missing key (strict) or a shape mismatch leaves the model unchanged.

    Args:
        model: a `BertBackbone` or a task model with a `backbone`.
        state: dict, canonical name -> array (see `name_mapping`).
        origins: dict, canonical name -> the name in the file (messages).
        strict: bool. Raise on missing or unexpected keys (default); when
            False, load what matches and log the rest.
        source: str. Where `state` came from, for messages.

    Returns:
        A dict with the sorted lists "missing", "unexpected" (file names)
        and "skipped" (optional groups absent from the checkpoint).
    """
    origins = origins or {}
    specs, missing, skipped = _match(model, state)
    used = {key for spec in specs for key in spec.keys}
    unused = [key for key in state if key not in used]
    unexpected = [key for key in unused if not _is_head_key(key)]
    if missing or unexpected:
        message = f"Weights of {source} do not match {model.name}."
        if missing:
            message += (f"\nMissing ({len(missing)}), in the model but not "
                        "in the checkpoint (Hugging Face BertModel names):\n"
                        f"{_format_keys(missing, {})}")
        if unexpected:
            message += (f"\nUnexpected ({len(unexpected)}), in the checkpoint"
                        " but not in the model:\n"
                        f"{_format_keys(unexpected, origins)}")
        if strict:
            raise CheckpointError(
                message + "\nPass strict=False to load the matching weights "
                "and keep the initial values of the missing ones."
            )
        logger.warning(message)

    values = _convert(specs, state, origins, (
        f"Shape mismatch between {source} and {model.name} (nothing was "
        "loaded; check that the config matches the weights):"))
    for spec, value in zip(specs, values):
        spec.variable.assign(value)
    for name in skipped:
        if name == "pooler":
            logger.info("%s has no weights for the pooler; it keeps its "
                        "initial values.", source)
        else:
            # A head that starts from random weights predicts nothing yet:
            # say so once, where the user sees it.
            logger.warning("%s has no weights for %s: it starts from random "
                           "initialization; train it before using its "
                           "predictions.", source, name)
    unused_heads = sorted(origins.get(k, k) for k in unused
                          if k not in unexpected)
    if unused_heads:
        logger.info("Not used (no such head in %s): %s", model.name,
                    ", ".join(unused_heads))
    return {"missing": sorted(missing),
            "unexpected": sorted(origins.get(k, k) for k in unexpected),
            "skipped": skipped}


def model_to_huggingface_state(model, include_pooler=True):
    """A HF state dict (`bert.` prefix for task models) from a model."""
    is_task = getattr(model, "backbone", model) is not model
    state = {}
    for group in weight_groups(model):
        if group.name == "pooler" and not include_pooler:
            continue
        prefix = "bert." if is_task and group.base else ""
        for spec in group.specs:
            value = keras.ops.convert_to_numpy(
                keras.ops.cast(spec.variable, "float32")
            )
            for key, part in zip(spec.keys, spec.to_hf(value)):
                state[prefix + key] = np.ascontiguousarray(part)
    return state
