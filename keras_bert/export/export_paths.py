"""Where exports are written: refuse to clobber, and never leave half a file.

An export is written into a temporary sibling of the target (same parent
directory, so the final rename stays on one file system) and renamed into
place only when it is complete. A failed or interrupted export leaves the
target as it was: absent, or the previous export when overwriting.
"""

import contextlib
import os
import shutil
import tempfile

from keras_bert.file_swap import swap_in_directory

SAVED_MODEL = "saved_model"
ONNX = "onnx"


def check_target(path, overwrite, artifact):
    """Raises when `path` exists and may not be replaced by an `artifact`.

    Args:
        path: str. The export target.
        overwrite: bool. Whether an existing export may be replaced.
        artifact: `SAVED_MODEL` (a directory) or `ONNX` (a file).
    """
    if not os.path.lexists(path):
        return
    if not overwrite:
        raise FileExistsError(
            f"{path} already exists. Pass overwrite=True (CLI: --overwrite) "
            "to replace it, or choose a new path."
        )
    if artifact == SAVED_MODEL:
        if not os.path.isdir(path):
            raise FileExistsError(
                f"Refusing to replace {path} with a SavedModel directory: it "
                "is a file. Remove it or choose another path."
            )
        existing = os.listdir(path)
        if existing and "saved_model.pb" not in existing:
            # A wrong path must not wipe unrelated files.
            raise FileExistsError(
                f"Refusing to replace {path}: it is not a SavedModel "
                f"directory (no saved_model.pb; it holds "
                f"{', '.join(sorted(existing)[:5])}). Choose a new or empty "
                "directory."
            )
    elif os.path.isdir(path):
        raise IsADirectoryError(
            f"{path} is a directory; an ONNX export is a single file. Pass a "
            "file path such as model.onnx."
        )


@contextlib.contextmanager
def staged_output(path, overwrite, artifact):
    """Yields a temporary path to write to; moves it to `path` on success.

    For `SAVED_MODEL` the yielded path is an empty directory, for `ONNX` a
    file name inside a temporary directory. Nothing is left behind when
    the body raises.
    """
    target = os.path.abspath(path)
    check_target(target, overwrite, artifact)
    parent, name = os.path.split(target)
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=f".{name}.partial-", dir=parent)
    try:
        if artifact == SAVED_MODEL:
            yield staging
            os.chmod(staging, 0o755)  # mkdtemp makes it private
            swap_in_directory(staging, target)
        else:
            staged_file = os.path.join(staging, name)
            yield staged_file
            os.replace(staged_file, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
