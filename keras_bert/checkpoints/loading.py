"""Building keras_bert models from checkpoint directories.

`load_backbone` and `load_task` are what `BertBackbone.from_preset` and
`Task.from_preset` call. A HF, Google or keras-hub directory is read into
canonical tensors once, the model is built from its config, and all weights
(encoder and any heads the task has) are checked and assigned in one pass.
"""

import collections
import contextlib
import inspect
import logging
import os

from keras_bert.checkpoints import checkpoint_files as files
from keras_bert.checkpoints import weight_files
from keras_bert.checkpoints.checkpoint_error import CheckpointError
from keras_bert.checkpoints.checkpoint_error import naming_file
from keras_bert.checkpoints.config_conversion import FIELD_NAMES
from keras_bert.checkpoints.config_conversion import (
    backbone_kwargs_from_bert_config,
)
from keras_bert.checkpoints.keras_hub_presets import read_keras_hub_preset
from keras_bert.checkpoints.name_mapping import google_to_canonical_names
from keras_bert.checkpoints.name_mapping import normalize_huggingface_names
from keras_bert.checkpoints.preset_weights import load_preset_weights
from keras_bert.checkpoints.weight_conversion import load_state_into_model
from keras_bert.layers.bert_initializer import deferred_initialization
from keras_bert.layers.bert_initializer import reinitialize
from keras_bert.checkpoints.weight_dimensions import canonical_dimensions
from keras_bert.checkpoints.weight_dimensions import check_dimensions
from keras_bert.checkpoints.weight_dimensions import check_preset_config
from keras_bert.serialization import import_config_module
from keras_bert.tasks.registry import record_of_class

logger = logging.getLogger("keras_bert.checkpoints")

# `labels`: the class names of a stored classification head (a Hugging
# Face config's `id2label`), or None.
_Checkpoint = collections.namedtuple("_Checkpoint",
                                     "config state origins labels",
                                     defaults=(None,))


def read_bert_checkpoint(path, load_weights=True, allow_pickle=False):
    """Reads a HF, Google or keras-hub directory: kwargs and named tensors.

    Returns a namedtuple `(config, state, origins, labels)`: `BertBackbone`
    arguments, canonical name -> array (empty without `load_weights`),
    canonical name -> name in the file, and the class names of a Hugging
    Face task head (`id2label`, in id order) or None.
    """
    layout = files.detect_layout(path)
    if layout == files.KERAS_BERT:
        raise CheckpointError(
            f"{path} is a keras_bert preset; load it with from_preset."
        )
    if layout == files.KERAS_HUB:
        return _Checkpoint(*read_keras_hub_preset(path, load_weights))
    config_name = "config.json" if layout == files.HUGGINGFACE else (
        "bert_config.json")
    config_file = os.path.join(path, config_name)
    raw_config = files.read_json(config_file)
    config = backbone_kwargs_from_bert_config(raw_config, source=config_file)
    labels = _label_names(raw_config.get("id2label"), config_file)
    if not load_weights:
        return _Checkpoint(config, {}, {}, labels)
    if layout == files.HUGGINGFACE:
        state, origins = normalize_huggingface_names(
            weight_files.read_huggingface_weights(
                path, allow_pickle=allow_pickle)
        )
    else:
        state, origins = google_to_canonical_names(
            weight_files.read_google_checkpoint(path)
        )
    check_dimensions(config, canonical_dimensions(state, origins),
                     config_file, path, FIELD_NAMES)
    return _Checkpoint(config, state, origins, labels)


def _label_names(id2label, source):
    """`id2label` ({"0": "NEGATIVE", ...}) as a list in id order, or None
    when absent or not the ids 0..n-1."""
    if not isinstance(id2label, dict) or not id2label:
        return None
    try:
        by_id = {int(key): str(value) for key, value in id2label.items()}
    except (TypeError, ValueError):
        by_id = {}
    if sorted(by_id) != list(range(len(id2label))):
        logger.warning("%s: id2label %s does not number its labels 0 to %d;"
                       " the labels are left unnamed.", source, id2label,
                       len(id2label) - 1)
        return None
    return [by_id[i] for i in range(len(by_id))]


def _split_kwargs(backbone_class, kwargs):
    """Separates backbone overrides from task constructor arguments."""
    names = set(inspect.signature(backbone_class.__init__).parameters)
    names.discard("kwargs")
    backbone_kwargs = {k: v for k, v in kwargs.items() if k in names}
    task_kwargs = {k: v for k, v in kwargs.items() if k not in names}
    return backbone_kwargs, task_kwargs


def _with_overrides(config, overrides):
    """`config` updated with `BertBackbone` overrides.

    `dropout` alone also sets the attention dropout when the checkpoint has
    the two at one rate (every BERT release does, 0.1): a caller who asks
    for `dropout=0.0` means no dropout, as in the constructor, where
    `attention_dropout=None` follows `dropout`. A checkpoint with its own
    attention rate keeps it unless `attention_dropout` is given too.
    """
    overrides = overrides or {}
    merged = {**config, **overrides}
    if ("dropout" in overrides and "attention_dropout" not in overrides
            and config.get("attention_dropout") in (None,
                                                    config.get("dropout"))):
        merged["attention_dropout"] = None
    return merged


def _preset_config(path):
    config_file = os.path.join(path, "config.json")
    config = files.inline_vocabularies(files.read_json(config_file), path,
                                       config_file)
    return import_config_module(config)


def load_preset_model(path, load_weights=True, backbone_overrides=None,
                      task_overrides=None):
    """Rebuilds the model stored in a keras_bert preset directory.

    Args:
        path: str. A directory written by `save_to_preset`.
        load_weights: bool. Load `model.weights.h5`.
        backbone_overrides: dict. `BertBackbone` arguments to replace in
            the stored config (e.g. `dtype`, `dropout`).
        task_overrides: dict. Task arguments to replace (task presets).
    """
    import keras

    layout = files.detect_layout(path)
    if layout != files.KERAS_BERT:
        raise CheckpointError(
            f"{path} is a {files.LAYOUT_NAMES[layout]} checkpoint, not a "
            "keras_bert preset (what save_to_preset writes). Load it with "
            "BertBackbone.from_preset or a task's from_preset, or convert "
            f"it: keras-bert convert {path} OUTPUT_DIR."
        )
    config = _preset_config(path)
    config_file = os.path.join(path, "config.json")
    weights_file = (files.preset_weights_file(path, "keras_bert preset")
                    if load_weights else None)
    # Before the overrides: the stored config must fit the stored weights.
    check_preset_config(config, config_file, weights_file)
    inner = config["config"]
    is_task = isinstance(inner.get("backbone"), dict)
    if is_task:
        inner["backbone"]["config"] = _with_overrides(
            inner["backbone"]["config"], backbone_overrides)
    else:
        config["config"] = inner = _with_overrides(inner, backbone_overrides)
    if task_overrides:
        if not is_task:
            raise CheckpointError(
                f"{path} holds a backbone; these arguments need a task: "
                f"{sorted(task_overrides)}."
            )
        inner.update(task_overrides)
    # Keras' errors (a Lambda refused in safe mode, a truncated h5) name
    # no file.
    with naming_file(config_file), _drawing_weights(not load_weights):
        model = keras.saving.deserialize_keras_object(config)
    if load_weights:
        with naming_file(weights_file):
            load_preset_weights(model, weights_file)
    return model


def load_backbone(backbone_class, path, load_weights=True, allow_pickle=False,
                  strict=True, **kwargs):
    """A backbone from a HF, Google, keras_bert or keras-hub directory.

    The model classes call this (`BertBackbone.from_preset`); they pass
    themselves, so this package never imports the models it builds.

    Args:
        backbone_class: the class to build, e.g. `keras_bert.BertBackbone`.
        path: str. The checkpoint directory (layout detected).
        load_weights: bool. Load weights (True) or build from config only.
        allow_pickle: bool. Permit PyTorch `.bin` weights (read with
            `torch.load(weights_only=True)`); safetensors needs no opt-in.
        strict: bool. Raise on missing/unexpected encoder keys.
        **kwargs: `BertBackbone` arguments overriding the config.
    """
    if files.detect_layout(path) == files.KERAS_BERT:
        model = load_preset_model(path, load_weights, backbone_overrides=kwargs)
        return getattr(model, "backbone", model)
    checkpoint = read_bert_checkpoint(path, load_weights, allow_pickle)
    with _drawing_weights(not (load_weights and strict)):
        backbone = backbone_class(**_with_overrides(checkpoint.config, kwargs))
    if load_weights:
        _load_checkpoint(backbone, backbone, checkpoint, strict, path)
    return backbone


@contextlib.contextmanager
def _drawing_weights(draw):
    """Draws the initial weights of the models built inside (`draw`), or
    leaves them at zero when a checkpoint is about to overwrite every one
    (`deferred_initialization`): most of a load's time otherwise."""
    if draw:
        yield
        return
    with deferred_initialization():
        yield


def _load_checkpoint(model, backbone, checkpoint, strict, source):
    """`load_state_into_model`, then the pooler drawn again when the
    checkpoint has none (the backbone was built without drawing it)."""
    report = load_state_into_model(model, checkpoint.state,
                                   checkpoint.origins, strict=strict,
                                   source=source)
    if "pooler" in report["skipped"]:
        reinitialize(backbone.pooler)
    return report


def _accepts(cls, name):
    return name in inspect.signature(cls.__init__).parameters


def _labelled_head(task_cls, state):
    """The stored weight of the head whose outputs a Hugging Face config's
    `id2label` names (the first head of the task record's first such
    class), or None."""
    record = record_of_class(task_cls)
    for hf_class in record.huggingface_classes if record else ():
        if hf_class.id2label and hf_class.heads:
            return state.get(f"{record.heads[hf_class.heads[0]]}.weight")
    return None


def _infer_head_sizes(task_cls, task_kwargs, state):
    """Takes `num_classes` from a stored classifier head unless given."""
    head = _labelled_head(task_cls, state)
    if (head is None or "num_classes" in task_kwargs
            or not _accepts(task_cls, "num_classes")):
        return task_kwargs
    return {**task_kwargs, "num_classes": int(head.shape[0])}


def _with_label_names(task_cls, task_kwargs, checkpoint):
    """Takes `label_names` from the checkpoint when it has the head they
    name and the caller gave none."""
    head = _labelled_head(task_cls, checkpoint.state)
    labels = checkpoint.labels
    if (head is None or labels is None or "label_names" in task_kwargs
            or not _accepts(task_cls, "label_names")
            or len(labels) != task_kwargs.get("num_classes", len(labels))
            or len(labels) != head.shape[0]):
        return task_kwargs
    return {**task_kwargs, "label_names": labels}


def load_task(task_cls, path, load_weights=True, allow_pickle=False,
              strict=True, **kwargs):
    """A task model on a backbone loaded from `path`, with its heads.

    Heads the task has (the head layers of its task record, e.g.
    `mlm_head`, `nsp_head`, `classifier_head`) are loaded when
    the checkpoint holds them, else they keep their initialization and a
    note is logged. For a keras_bert preset of the same task class, the
    whole stored model is rebuilt.

    Args:
        task_cls: the task class, e.g. `keras_bert.BertPretrainer`; its
            `backbone_class` is the backbone built under the heads.
        path: str. The checkpoint directory.
        load_weights, allow_pickle, strict: as in `load_backbone`.
        **kwargs: backbone overrides and task constructor arguments (told
            apart by the backbone class's signature).
    """
    backbone_class = task_cls.backbone_class
    backbone_kwargs, task_kwargs = _split_kwargs(backbone_class, kwargs)
    if files.detect_layout(path) == files.KERAS_BERT:
        import keras

        config = _preset_config(path)
        saved_cls = keras.saving.get_registered_object(
            config.get("registered_name") or "")
        if isinstance(saved_cls, type) and issubclass(saved_cls, task_cls):
            return load_preset_model(path, load_weights, backbone_kwargs,
                                     task_kwargs)
        backbone = load_backbone(backbone_class, path, load_weights,
                                 **backbone_kwargs)
        logger.info("%s holds a %s; the %s heads start from their "
                    "initialization.", path, config.get("class_name"),
                    task_cls.__name__)
        return task_cls(backbone=backbone, **task_kwargs)

    checkpoint = read_bert_checkpoint(path, load_weights, allow_pickle)
    with _drawing_weights(not (load_weights and strict)):
        backbone = backbone_class(
            **_with_overrides(checkpoint.config, backbone_kwargs))
    task_kwargs = _infer_head_sizes(task_cls, task_kwargs, checkpoint.state)
    task_kwargs = _with_label_names(task_cls, task_kwargs, checkpoint)
    # The heads are drawn as usual: the checkpoint may lack them.
    task = task_cls(backbone=backbone, **task_kwargs)
    if load_weights:
        _load_checkpoint(task, backbone, checkpoint, strict, path)
    return task


def load_checkpoint_weights(model, path, allow_pickle=False, strict=True):
    """Loads a HF / Google checkpoint's weights into an existing model.

    The model's architecture must match the checkpoint; on any error
    (missing keys when strict, a shape mismatch) no weight is changed.
    Returns the report of `load_state_into_model`.
    """
    checkpoint = read_bert_checkpoint(path, True, allow_pickle)
    return load_state_into_model(model, checkpoint.state, checkpoint.origins,
                                 strict=strict, source=path)
