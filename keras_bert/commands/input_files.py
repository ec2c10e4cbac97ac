"""Input files a command names, checked before any framework loads."""

import os


def require_files(paths):
    """Raises `FileNotFoundError` ("PATH: no such file.") for the first of
    `paths` that is not a file, as every command words it."""
    for path in paths:
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{path}: no such file.")
