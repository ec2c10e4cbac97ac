"""Writing keras_bert presets and Hugging Face directories, atomically.

Both writers fill a temporary directory next to the target and rename it
into place at the end, so an interrupted or failed write leaves any
previous version of the target intact.
"""

import contextlib
import datetime
import json
import os
import shutil
import tempfile

from keras_bert.checkpoints.checkpoint_error import CheckpointError
from keras_bert.checkpoints.checkpoint_files import PRESET_VOCABULARY
from keras_bert.checkpoints.checkpoint_files import map_vocabularies
from keras_bert.checkpoints.config_conversion import bert_config_from_backbone
from keras_bert.checkpoints.weight_conversion import find_layer
from keras_bert.checkpoints.weight_conversion import model_to_huggingface_state
from keras_bert.checkpoints.preset_weights import save_preset_weights
from keras_bert.file_swap import swap_in_directory
from keras_bert.quantization import is_quantized
from keras_bert.quantization import quantized_layers
from keras_bert.tasks.registry import record_of_model
from keras_bert.version import __version__


@contextlib.contextmanager
def atomic_directory(target):
    """Yields a temporary directory that replaces `target` on success.

    An existing target is replaced only when it is empty or holds a
    checkpoint (a `config.json`), so a wrong path cannot wipe unrelated
    files.
    """
    target = os.path.abspath(target)
    if os.path.exists(target):
        if not os.path.isdir(target):
            raise CheckpointError(f"{target} exists and is not a directory.")
        existing = os.listdir(target)
        if existing and "config.json" not in existing:
            raise CheckpointError(
                f"Refusing to replace {target}: it holds files that are not "
                f"a checkpoint ({', '.join(sorted(existing)[:10])}). Choose a "
                "new or empty directory."
            )
    parent, name = os.path.split(target)
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=f".{name}.tmp-", dir=parent)
    try:
        yield staging
        os.chmod(staging, 0o755)
        swap_in_directory(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def write_safetensors(filename, tensors, metadata):
    """`safetensors.numpy.save_file`, readable as any file written here.

    safetensors creates its file private to the user (mode 0600); an
    exported model is meant to be shared, so it gets the mode `open`
    would give: 0666 less the umask.
    """
    from safetensors.numpy import save_file

    save_file(tensors, filename, metadata=metadata)
    # Python has no umask getter: set it and put it back.
    umask = os.umask(0o022)
    os.umask(umask)
    os.chmod(filename, 0o666 & ~umask)


def _write_json(filename, data):
    with open(filename, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2)
        f.write("\n")


def _tokenizer_of(model, tokenizer):
    if tokenizer is not None:
        return tokenizer
    return getattr(getattr(model, "preprocessor", None), "tokenizer", None)


def save_to_preset(model, preset_dir, tokenizer=None):
    """Writes a keras_bert preset: the model, its weights and vocabulary.

    Files: `config.json` (the Keras serialized model), `model.weights.h5`,
    `metadata.json` (keras_bert and Keras versions, parameter count, date)
    and, when there is a tokenizer, whatever its `save_to_preset` writes
    (`vocab.txt`, `tokenizer_config.json`).

    Args:
        model: a `BertBackbone` or a task model.
        preset_dir: str. Target directory (replaced atomically).
        tokenizer: optional `BertTokenizer`; by default the one of the
            model's preprocessor, if any.
    """
    import keras

    tokenizer = _tokenizer_of(model, tokenizer)
    config = keras.saving.serialize_keras_object(model)
    if tokenizer is not None:
        # Named, not listed: the preset holds it as vocab.txt.
        vocabulary = tokenizer.get_vocabulary()
        config = map_vocabularies(config, lambda value: (
            PRESET_VOCABULARY if value == vocabulary else value))
    with atomic_directory(preset_dir) as staging:
        _write_json(os.path.join(staging, "config.json"), config)
        save_preset_weights(model, os.path.join(staging, "model.weights.h5"))
        if tokenizer is not None:
            tokenizer.save_to_preset(staging)
        _write_json(os.path.join(staging, "metadata.json"), {
            "keras_bert_version": __version__,
            "keras_version": keras.__version__,
            "saved_with_backend": keras.config.backend(),
            "class_name": type(model).__name__,
            "parameter_count": int(model.count_params()),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
                timespec="seconds"),
        })


def _huggingface_architecture(model):
    """(transformers class, keep pooler, extra config) for a model: the
    first Hugging Face class of its task record whose heads it has."""
    record = record_of_model(model)
    for hf_class in record.huggingface_classes if record else ():
        heads = [find_layer(model, name) for name in hf_class.heads]
        if any(head is None for head in heads):
            continue
        extra = {}
        if hf_class.id2label:
            names = getattr(model, "label_names", None) or [
                f"LABEL_{i}" for i in range(heads[0].units)]
            extra = {
                "id2label": {str(i): name for i, name in enumerate(names)},
                "label2id": {name: i for i, name in enumerate(names)},
            }
        return hf_class.name, hf_class.pooler, extra
    raise CheckpointError(
        f"{type(model).__name__} has no Hugging Face BERT equivalent (its "
        "task record in keras_bert.tasks names no transformers class whose "
        "heads it has); export its backbone instead."
    )


def _quantized_modes(model):
    layers = quantized_layers(model)
    return (f"{len(layers)} layers in "
            f"{', '.join(sorted({l.quantization_mode for l in layers}))}, "
            f"e.g. {layers[0].path}")


def export_to_huggingface(model, hf_dir, tokenizer=None):
    """Writes a directory `transformers` loads with `from_pretrained`.

    Files: `config.json`, `model.safetensors` and, when there is a
    tokenizer, `vocab.txt` + `tokenizer_config.json`. A backbone becomes a
    `BertModel`; a `BertPretrainer` a `BertForPreTraining` (MLM decoder tied
    to the word embeddings, as in transformers); task models the matching
    `BertFor...` class.

    Args:
        model: a `BertBackbone` or a task model.
        hf_dir: str. Target directory (replaced atomically).
        tokenizer: optional `BertTokenizer`; by default the one of the
            model's preprocessor, if any.
    """
    if is_quantized(model):
        # Its int8 kernels would be written as if they were the weights.
        raise ValueError(
            f"The {type(model).__name__} is quantized "
            f"({_quantized_modes(model)}); Hugging Face BERT files hold "
            "float weights. Export the model before `quantize()`, or save "
            "the quantized one with `save_to_preset` or `model.save`.")
    architecture, include_pooler, extra = _huggingface_architecture(model)
    config = bert_config_from_backbone(
        getattr(model, "backbone", model), architecture, extra
    )
    state = model_to_huggingface_state(model, include_pooler=include_pooler)
    tokenizer = _tokenizer_of(model, tokenizer)
    with atomic_directory(hf_dir) as staging:
        _write_json(os.path.join(staging, "config.json"), config)
        # transformers requires the "format" metadata on safetensors files.
        write_safetensors(os.path.join(staging, "model.safetensors"), state,
                          metadata={"format": "pt"})
        if tokenizer is not None:
            tokenizer.save_to_preset(staging)
