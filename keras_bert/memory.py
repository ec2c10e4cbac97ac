"""Freed memory kept in the process, so a training step does not fault it in.

With glibc's default settings every block larger than the mmap threshold
(at most 32 MiB), and every block over 64 MiB that a thread other than the
main one asks for, is mapped fresh from the kernel and unmapped when freed.
A framework that allocates its temporaries anew at each step then touches
new pages every step, and each 4 KiB page costs a page fault and a zeroing
(XLA's block of temporaries, from its executor thread, on JAX; PyTorch's
activations). Keeping the memory makes a training step markedly faster on
a CPU (`bench/malloc_reuse.py`; docs/performance.md, "Memory that stays").

The setting is the whole process's, so keras_bert never makes it on
import: the `keras-bert` commands call `tune_malloc_unless_opted_out` at
start, and a program that uses keras_bert as a library calls
`keras_bert.tune_malloc()` itself, first thing.
"""

import ctypes
import os
import sys

# mallopt parameters, from glibc's <malloc.h>.
_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
_M_ARENA_MAX = -8

# Freed memory at the top of the heap is returned to the kernel only above
# this much: larger than the temporaries of a training step of the models
# this package trains on a CPU, small next to the memory of such a machine.
RETAINED_BYTES = 1 << 30

OPT_OUT_VARIABLE = "KERAS_BERT_TUNE_MALLOC"

# The same settings for a process started with them (any program, e.g.
# another library's, in the environment variable GLIBC_TUNABLES); they
# then hold for every thread, whatever it imported first.
GLIBC_TUNABLES = ("glibc.malloc.arena_max=1:glibc.malloc.mmap_max=0:"
                  f"glibc.malloc.trim_threshold={RETAINED_BYTES}")


def tune_malloc():
    """Lets glibc's malloc reuse freed memory instead of mapping it afresh.

    Sets three `mallopt` parameters for the whole process: one arena for
    every thread (so a worker thread's large blocks come from the heap, not
    from a fresh mapping), no mmap for large blocks, and up to
    `RETAINED_BYTES` of freed memory kept for reuse. The `keras-bert`
    commands call it at start (unless the environment variable
    `KERAS_BERT_TUNE_MALLOC` is `0`); importing keras_bert does not. A
    program calls it once, before its first computation: threads that
    already allocated keep their own arena (JAX's and TensorFlow's
    executor threads); PyTorch allocates on the calling thread and gains
    whenever it is called.

    The cost: the process keeps up to 1 GiB of freed memory mapped, and all
    threads share one allocator lock (small blocks are served from each
    thread's cache without it).

    Returns:
        bool. True when the settings took effect; False on a C library
        other than glibc (macOS, Windows, musl), where nothing changes.

    Example:
    >>> import keras_bert
    >>> applied = keras_bert.tune_malloc()  # True on Linux with glibc
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None)
    except OSError:
        return False
    # The parameters below are glibc's; musl has a mallopt that ignores them.
    if not hasattr(libc, "gnu_get_libc_version"):
        return False
    settings = ((_M_ARENA_MAX, 1), (_M_MMAP_MAX, 0),
                (_M_TRIM_THRESHOLD, RETAINED_BYTES))
    return all([libc.mallopt(name, value) == 1 for name, value in settings])


def tune_malloc_unless_opted_out():
    """Calls `tune_malloc` unless `KERAS_BERT_TUNE_MALLOC=0` is set: what
    the `keras-bert` commands (and bench/ workers) do at start."""
    if os.environ.get(OPT_OUT_VARIABLE, "1").strip() == "0":
        return False
    return tune_malloc()
