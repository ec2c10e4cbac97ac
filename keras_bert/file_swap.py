"""Replacing a file or directory so that a failure never leaves half of it."""

import contextlib
import os
import shutil
import tempfile


def swap_in_directory(staged, target):
    """Renames the finished directory `staged` to `target`.

    An existing `target` is first renamed aside, and put back if the second
    rename fails, so at every moment `target` is the old or the new whole
    directory. Both paths must be on one file system.
    """
    if not os.path.lexists(target):
        os.rename(staged, target)
        return
    parent, name = os.path.split(target)
    retired = tempfile.mkdtemp(prefix=f".{name}.old-", dir=parent)
    os.rmdir(retired)
    os.rename(target, retired)
    try:
        os.rename(staged, target)
    except OSError:
        os.rename(retired, target)
        raise
    shutil.rmtree(retired, ignore_errors=True)


@contextlib.contextmanager
def staged_file(target):
    """Yields a temporary name beside `target`, renamed over it on success.

    Until the body returns, `target` keeps its old contents (or stays
    absent); a body that raises, or a process killed inside it, never
    leaves a half-written `target`.
    """
    parent, name = os.path.split(os.path.abspath(target))
    os.makedirs(parent, exist_ok=True)
    # Created by the body's writer, so with the permissions a plain write
    # would give (`mkstemp` would make the file private).
    staging = os.path.join(parent, f".{name}.partial-{os.getpid()}")
    try:
        yield staging
        os.replace(staging, target)
    finally:
        if os.path.exists(staging):
            os.remove(staging)
