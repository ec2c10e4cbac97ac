"""Replacing a directory so that a failure never leaves half of it."""

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
