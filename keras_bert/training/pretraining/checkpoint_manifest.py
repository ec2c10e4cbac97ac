"""A training checkpoint's manifest: its files' sizes and SHA-256 sums.

`PretrainingCheckpoint` writes the manifest last, after the files are
flushed to disk, inside the folder it then renames into place; `--resume`
takes a checkpoint only when every file matches it. A folder that was
copied half-way, cut short by a full disk, or left torn by a crash on a
file system that reorders writes is then skipped with the reason, instead
of ending the run in `OSError: truncated file` or `BadZipFile`.
"""

import hashlib
import json
import os
import zipfile

MANIFEST_FILE = "manifest.json"


def _digest(path, sync=False):
    sha256 = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(2**20), b""):
            sha256.update(block)
        if sync:
            os.fsync(file.fileno())
    return sha256.hexdigest()


def write_manifest(directory, names):
    """Writes `directory`/manifest.json for the files `names`, each
    flushed to disk first (the manifest vouches for what is there)."""
    manifest = {name: {"bytes": os.path.getsize(os.path.join(directory, name)),
                       "sha256": _digest(os.path.join(directory, name),
                                         sync=True)}
                for name in names}
    path = os.path.join(directory, MANIFEST_FILE)
    with open(path, "w") as file:
        json.dump({"files": manifest}, file, indent=2)
        file.flush()
        os.fsync(file.fileno())


def _problem_without_manifest(directory, names):
    # Checkpoints written before manifests: the files must at least open.
    import h5py

    for name in names:
        path = os.path.join(directory, name)
        try:
            if name.endswith(".h5"):
                h5py.File(path, "r").close()
            elif name.endswith(".npz"):
                with zipfile.ZipFile(path) as archive:
                    broken = archive.testzip()
                if broken:
                    return f"{name} is corrupt ({broken})"
            else:
                with open(path) as file:
                    json.load(file)
        except (OSError, ValueError, zipfile.BadZipFile) as error:
            return f"{name} cannot be read ({error})"
    return None


def checkpoint_problem(directory, names):
    """Why the checkpoint folder `directory` cannot be used, or None.

    Args:
        directory: str. A checkpoint folder.
        names: the files it must hold.
    """
    missing = [name for name in names
               if not os.path.isfile(os.path.join(directory, name))]
    if missing:
        return f"{', '.join(missing)} missing"
    path = os.path.join(directory, MANIFEST_FILE)
    if not os.path.isfile(path):
        return _problem_without_manifest(directory, names)
    try:
        with open(path) as file:
            files = json.load(file)["files"]
        expected = {name: (files[name]["bytes"], files[name]["sha256"])
                    for name in names}
    except (OSError, ValueError, KeyError, TypeError) as error:
        return f"{MANIFEST_FILE} is unreadable ({error!r})"
    for name, (size, digest) in expected.items():
        actual = os.path.getsize(os.path.join(directory, name))
        if actual != size:
            return (f"{name} has {actual:,} bytes, the manifest says "
                    f"{size:,}")
        if _digest(os.path.join(directory, name)) != digest:
            return f"{name} does not match its SHA-256 in the manifest"
    return None
