"""The sizes a weight file gives a BERT, read from its header, checked
against the config beside it before the model is built.

A config that says 4,000,000 tokens next to weights of 30,522 would build
a 12 GB embedding table before the first weight failed to fit. The sizes
are read from the tensor shapes alone (a safetensors header, memory-mapped
arrays, the metadata of an `.h5` file), so nothing the size of the model
is allocated, and a mismatch names the field, the config's value and the
tensor that disagrees.
"""

import re

from keras_bert.checkpoints.backbone_arguments import TASK_BOUNDS
from keras_bert.checkpoints.backbone_arguments import check_backbone_arguments
from keras_bert.checkpoints.backbone_arguments import check_whole_numbers
from keras_bert.checkpoints.checkpoint_error import CheckpointError

# (argument, canonical tensor name, axis). Canonical names are Hugging
# Face's (`name_mapping`), whose Linear weights are (out, in).
_CANONICAL = (
    ("vocabulary_size", "embeddings.word_embeddings.weight", 0),
    ("hidden_dim", "embeddings.word_embeddings.weight", 1),
    ("max_sequence_length", "embeddings.position_embeddings.weight", 0),
    ("num_segments", "embeddings.token_type_embeddings.weight", 0),
    ("intermediate_dim", "encoder.layer.0.intermediate.dense.weight", 0),
)
_CANONICAL_BLOCK = re.compile(r"encoder\.layer\.(\d+)\.")
# The same in a keras_bert `.weights.h5`, whose datasets Keras names after
# the layer classes (`transformer_encoder_block_1`), under the task's
# `bert_backbone` group in a task preset. Dense kernels are (in, out).
_EMBEDDINGS = r"(?:^|/)bert_embeddings/"
_KERAS = (
    ("vocabulary_size", _EMBEDDINGS + r"token_embedding/vars/0$", 0),
    ("hidden_dim", _EMBEDDINGS + r"token_embedding/vars/0$", 1),
    ("max_sequence_length", _EMBEDDINGS + r"vars/0$", 0),
    ("num_segments", _EMBEDDINGS + r"segment_embedding/vars/0$", 0),
    ("intermediate_dim",
     r"(?:^|/)transformer_encoder_block/intermediate_dense/vars/0$", 1),
)
_KERAS_BLOCK = re.compile(
    r"(?:^|/)transformer_encoder_block(?:_(\d+))?/intermediate_dense/")


def canonical_dimensions(shapes, origins=None):
    """`{argument: (size, tensor)}` from canonical-named tensor shapes.

    Args:
        shapes: dict. Canonical name -> shape (arrays work too).
        origins: dict or None. Canonical name -> the file's own name.
    """
    origins = origins or {}
    shapes = {name: tuple(getattr(value, "shape", value))
              for name, value in shapes.items()}
    found = {}
    for argument, name, axis in _CANONICAL:
        if len(shapes.get(name, ())) > axis:
            found[argument] = (shapes[name][axis],
                               f"{origins.get(name, name)} {shapes[name]}")
    blocks = {int(match.group(1)) for match in map(_CANONICAL_BLOCK.match,
                                                   shapes) if match}
    if blocks:
        found["num_layers"] = (max(blocks) + 1,
                               f"blocks encoder.layer.0-{max(blocks)}")
    return found


def h5_shapes(filename):
    """`{dataset: (shape, dtype)}` of an `.h5` weights file, from its
    metadata (no weight is read).

    A dataset whose data lies in another file (HDF5 external storage or a
    virtual dataset: what CVE-2026-1669 used to read any file of the
    machine through a `.keras` file) is refused by name, whatever the
    Keras version (Keras before 3.13.2 read such data).
    """
    import h5py

    shapes = {}

    def collect(name, item):
        if not isinstance(item, h5py.Dataset):
            return
        if item.external:
            elsewhere = f"{item.external[0][0]} (HDF5 external storage)"
        elif item.is_virtual:
            elsewhere = (f"{item.virtual_sources()[0].file_name} (a "
                         "virtual dataset)")
        else:
            shapes[name] = (item.shape, item.dtype)
            return
        raise CheckpointError(
            f"{filename}: dataset {name} keeps its data in {elsewhere}; a "
            "weights file may hold only its own data.")

    try:
        with h5py.File(filename, "r") as f:
            f.visititems(collect)
    except OSError as error:
        raise CheckpointError(
            f"{filename} is truncated or not a Keras weights file ({error})."
        ) from None
    return shapes


def keras_weights_dimensions(filename):
    """`{argument: (size, dataset)}` of a keras_bert `.weights.h5`, from
    its metadata (`h5_shapes`)."""
    # Float datasets only: a quantized kernel may be packed.
    shapes = {name: shape for name, (shape, dtype) in
              h5_shapes(filename).items() if dtype.kind == "f"}
    found = {}
    for argument, pattern, axis in _KERAS:
        matches = [name for name in shapes if re.search(pattern, name)]
        if len(matches) == 1 and len(shapes[matches[0]]) > axis:
            found[argument] = (shapes[matches[0]][axis],
                               f"{matches[0]} {shapes[matches[0]]}")
    blocks = {match.group(1) for match in map(_KERAS_BLOCK.search, shapes)
              if match}
    if blocks:
        found["num_layers"] = (len(blocks), f"{len(blocks)} "
                               "transformer_encoder_block groups")
    return found


def check_dimensions(arguments, dimensions, source, weights_source,
                     names=None):
    """Raises `CheckpointError` where the config and the weights disagree.

    Args:
        arguments: dict. `BertBackbone` arguments from the config.
        dimensions: dict. `canonical_dimensions` or
            `keras_weights_dimensions` of the weights.
        source: str. The config file, for the message.
        weights_source: str. The weight file or directory.
        names: dict or None. Argument -> the config's field name.
    """
    names = names or {}
    for argument, (size, tensor) in dimensions.items():
        given = arguments.get(argument)
        if given is not None and given != size:
            raise CheckpointError(
                f"{source}: {names.get(argument, argument)}={given!r} but "
                f"{weights_source} says {size} ({tensor}). The config and "
                "the weights do not belong together; nothing was built.")


def check_preset_config(config, config_file, weights_file=None):
    """Checks the model a keras_bert preset's config describes: its
    backbone's arguments (`check_backbone_arguments`), a task's head sizes
    (`TASK_BOUNDS`) and, with `weights_file`, the backbone's sizes against
    that file's."""
    inner = config.get("config")
    backbone = inner.get("backbone") if isinstance(inner, dict) else None
    arguments = (backbone or {}).get("config", inner)
    if not isinstance(arguments, dict):
        raise CheckpointError(f"{config_file} holds no model config.")
    check_backbone_arguments(arguments, config_file)
    if backbone:
        check_whole_numbers(inner, TASK_BOUNDS, config_file)
    if weights_file is not None:
        check_dimensions(arguments, keras_weights_dimensions(weights_file),
                         config_file, weights_file)
