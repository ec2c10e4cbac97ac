"""Reading the weights of a checkpoint directory into NumPy arrays, with
errors that say which file, tensor or shard is wrong.

Readers return `{name: numpy array}` as stored; renaming and reshaping
happen in `name_mapping` and `weight_conversion`.
"""

import glob
import json
import os

import numpy as np

from keras_bert.checkpoints.checkpoint_error import CheckpointError
from keras_bert.checkpoints.checkpoint_files import check_not_lfs_pointer
from keras_bert.checkpoints.checkpoint_files import directory_listing
from keras_bert.checkpoints.checkpoint_files import read_json
from keras_bert.checkpoints.confined_paths import confined_path


def _numpy_dtype(code, filename, name):
    simple = {
        "F64": "float64", "F32": "float32", "F16": "float16",
        "I64": "int64", "I32": "int32", "I16": "int16", "I8": "int8",
        "U8": "uint8", "BOOL": "bool",
    }
    if code in simple:
        return np.dtype(simple[code])
    if code == "BF16":
        # NumPy has no bfloat16; ml_dtypes (a JAX/TF dependency) adds it.
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    raise CheckpointError(
        f"{filename}: tensor {name!r} has dtype {code!r}, which keras_bert "
        "cannot read."
    )


def read_safetensors(filename):
    """Reads a safetensors file into NumPy arrays (memory-mapped).

    The file is first checked by the `safetensors` library itself (header
    at most 100 MB and nested at most 128 deep, offsets contiguous, not
    overlapping and covering the data exactly, sizes matching shapes), so
    it is read only as the library would read it. The tensors are then
    mapped here rather than with `safetensors.numpy`, so that bfloat16
    loads (NumPy has no bfloat16 of its own). No code is executed: the
    format is a JSON header followed by raw little-endian bytes.
    """
    header, data_start = _safetensors_header(filename)
    header.pop("__metadata__", None)
    data = np.zeros((0,), np.uint8)
    if os.path.getsize(filename) > data_start:
        data = np.memmap(filename, dtype=np.uint8, mode="r", offset=data_start)
    tensors = {}
    for name, info in header.items():
        dtype = _numpy_dtype(info["dtype"], filename, name)
        begin, end = info["data_offsets"]
        tensors[name] = data[begin:end].view(dtype).reshape(info["shape"])
    return tensors


def read_safetensors_metadata(filename):
    """The `__metadata__` strings of a safetensors file ({} when none)."""
    header, _ = _safetensors_header(filename)
    return header.get("__metadata__") or {}


def _safetensors_header(filename):
    """The validated header of a safetensors file and where its data
    starts; a `CheckpointError` naming the file for anything the
    `safetensors` library refuses."""
    from safetensors import SafetensorError
    from safetensors import safe_open

    check_not_lfs_pointer(filename)
    try:
        # Opening parses and checks the header only; no tensor is read.
        with safe_open(filename, framework="numpy"):
            pass
    except SafetensorError as error:
        problem = str(error).replace("Error while deserializing header: ",
                                     "")
        raise CheckpointError(
            f"{filename} is truncated or not a safetensors file ({problem}; "
            f"the file has {os.path.getsize(filename)} bytes); download it "
            "again.") from None
    with open(filename, "rb") as f:
        header_size = int.from_bytes(f.read(8), "little")
        # Valid JSON of bounded size and depth: the library checked it.
        header = json.loads(f.read(header_size))
    return header, 8 + header_size


def _read_pickle(filename):
    import torch

    check_not_lfs_pointer(filename)
    try:
        # weights_only: the restricted unpickler, which builds tensors and
        # plain containers but never calls arbitrary code from the file.
        state = torch.load(filename, map_location="cpu", weights_only=True)
    except Exception as error:
        raise CheckpointError(
            f"{filename} could not be read with torch.load(weights_only=True)"
            f": {error}"
        ) from None
    if not isinstance(state, dict) or not all(
        isinstance(v, torch.Tensor) for v in state.values()
    ):
        raise CheckpointError(
            f"{filename} does not hold a flat state dict of tensors."
        )
    return {
        name: (value.float() if value.dtype == torch.bfloat16 else value)
        .numpy()
        for name, value in state.items()
    }


def _read_sharded(path, index_name, read_shard):
    index_file = os.path.join(path, index_name)
    check_not_lfs_pointer(index_file)
    weight_map = read_json(index_file).get("weight_map")
    if not isinstance(weight_map, dict) or not all(
            isinstance(shard, str) for shard in weight_map.values()):
        raise CheckpointError(
            f"{index_file} has no 'weight_map' of tensor names to shard "
            "file names.")
    tensors = {}
    for shard in sorted(set(weight_map.values())):
        shard_file = confined_path(path, shard, f"{index_file} (weight_map)")
        if not os.path.isfile(shard_file):
            raise CheckpointError(
                f"{index_file} lists shard {shard}, which is not in {path}. "
                f"Found: {directory_listing(path)}."
            )
        tensors.update(read_shard(shard_file))
    absent = sorted(set(weight_map) - set(tensors))
    if absent:
        raise CheckpointError(
            f"{index_file} lists tensors its shards do not hold: {absent}."
        )
    return tensors


def refuse_pickle(source, pickles):
    """Raises the error for weights that are PyTorch pickles only."""
    raise CheckpointError(
        f"{source} has PyTorch pickle weights only ({', '.join(pickles)}). "
        "Loading a pickle can run code from the file, so keras_bert "
        "does not by default. Prefer model.safetensors (transformers: "
        "`model.save_pretrained(dir, safe_serialization=True)`), or pass "
        "allow_pickle=True if you trust the file; it is then read with "
        "torch.load(weights_only=True)."
    )


def read_huggingface_weights(path, allow_pickle=False):
    """All tensors of a HF directory: safetensors first, pickle on request."""
    files = set(os.listdir(path))
    if "model.safetensors" in files:
        return read_safetensors(os.path.join(path, "model.safetensors"))
    if "model.safetensors.index.json" in files:
        return _read_sharded(path, "model.safetensors.index.json",
                             read_safetensors)
    pickles = sorted(
        files & {"pytorch_model.bin", "pytorch_model.bin.index.json"}
    )
    if pickles and not allow_pickle:
        refuse_pickle(path, pickles)
    if "pytorch_model.bin" in files:
        return _read_pickle(os.path.join(path, "pytorch_model.bin"))
    if "pytorch_model.bin.index.json" in files:
        return _read_sharded(path, "pytorch_model.bin.index.json",
                             _read_pickle)
    raise CheckpointError(
        f"{path} has a BERT config.json but no weights keras_bert can read. "
        f"Found: {directory_listing(path)}. Expected model.safetensors or "
        "model.safetensors.index.json with its shards (TF .h5 and Flax "
        ".msgpack weights are not supported)."
    )


def _google_checkpoint_prefix(path):
    prefix = os.path.join(path, "bert_model.ckpt")
    if os.path.isfile(prefix + ".index"):
        return prefix
    indexes = sorted(glob.glob(os.path.join(path, "*.index")))
    if len(indexes) == 1:
        return indexes[0][: -len(".index")]
    raise CheckpointError(
        f"{path} has bert_config.json but "
        + ("several checkpoints: " + ", ".join(map(os.path.basename, indexes))
           + "; keep one, or name it bert_model.ckpt"
           if indexes else "no bert_model.ckpt.index")
        + f". Found: {directory_listing(path)}."
    )


def read_google_checkpoint(path):
    """All variables of an original (TF1 name-based) BERT checkpoint."""
    prefix = _google_checkpoint_prefix(path)
    shards = sorted(glob.glob(glob.escape(prefix) + ".data-*"))
    if not shards:
        raise CheckpointError(
            f"{prefix}.index has no data file ({os.path.basename(prefix)}"
            ".data-00000-of-00001 expected). Found: "
            f"{directory_listing(path)}."
        )
    for filename in [prefix + ".index"] + shards:
        check_not_lfs_pointer(filename)
    import tensorflow as tf

    try:
        reader = tf.train.load_checkpoint(prefix)
        return {
            name: reader.get_tensor(name)
            for name in reader.get_variable_to_shape_map()
        }
    except (tf.errors.OpError, ValueError) as error:
        raise CheckpointError(
            f"TensorFlow could not read the checkpoint {prefix}: "
            f"{error}. The files may be truncated; download them again."
        ) from None
