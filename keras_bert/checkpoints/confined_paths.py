"""Paths that a checkpoint's own files name, kept inside its directory.

A preset's `config.json` names its vocabulary file, a sentence-transformers
`modules.json` the folders of its modules, a sharded checkpoint's index its
shards, a training run's `latest` its checkpoint folder. Those names come
from whoever wrote the files, so each one is resolved here, by name, before
anything is opened: an absolute path, a `..` component, or a symlink that
leads out of the directory is refused with a `CheckpointError` that names
the file and the value. (Keras' CVE-2025-1550, CVE-2025-9906 and
CVE-2026-1669 were all a model file reaching what it should not.)

A Hugging Face cache snapshot (`models--org--name/snapshots/<revision>/`)
holds symlinks into the repository's `blobs/` folder; there the repository
folder is the boundary, so models downloaded by `huggingface_hub` load.
"""

import os

from keras_bert.checkpoints.checkpoint_error import CheckpointError


def confinement_root(directory):
    """The real folder that files named inside `directory` must stay in."""
    root = os.path.realpath(directory)
    snapshots, _ = os.path.split(root)
    repository, folder = os.path.split(snapshots)
    if folder == "snapshots" and os.path.isdir(os.path.join(repository,
                                                            "blobs")):
        return repository
    return root


def confined_path(directory, name, source):
    """`directory`/`name`, refused unless it stays inside `directory`.

    Args:
        directory: str. The folder the naming file belongs to.
        name: str. The relative path the file gives ("vocab.txt",
            "1_Pooling", "model-00001-of-00002.safetensors"; "" for the
            directory itself).
        source: str. The file and key that gave `name`, for the message,
            e.g. "preset/config.json (tokenizer vocabulary)".

    Example:
    >>> confined_path("preset", "vocab.txt", "preset/config.json")
    'preset/vocab.txt'
    >>> try:
    ...     confined_path("preset", "/etc/passwd", "preset/config.json")
    ... except CheckpointError as error:
    ...     print(error)
    preset/config.json names '/etc/passwd', which is outside preset: ...
    """
    def refuse(why):
        return CheckpointError(
            f"{source} names {name!r}, which is outside {directory}: a "
            "checkpoint's files may name only files inside its own "
            f"directory ({why}).")

    if not isinstance(name, str) or "\0" in name:
        raise CheckpointError(
            f"{source}: expected a relative file name, got {name!r}.")
    if os.path.isabs(name) or os.path.splitdrive(name)[0]:
        raise refuse("an absolute path")
    if ".." in name.replace("\\", "/").split("/"):
        raise refuse("'..' leads out")
    path = os.path.join(directory, name)
    root = confinement_root(directory)
    real = os.path.realpath(path)
    if os.path.commonpath([root, real]) != root:
        raise refuse(f"a symlink leads to {real}")
    return os.path.normpath(path)
