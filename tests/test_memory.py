"""Freed memory stays in the process after `import keras_bert` (glibc)."""

import ctypes
import json
import os
import subprocess
import sys
import textwrap

import pytest

from keras_bert import memory

# A fresh process imports keras_bert, then frees and re-allocates a 96 MiB
# block, touching every page, on the main thread and on a new thread (as
# XLA's executor does): with glibc's defaults each round maps fresh pages
# and faults them in again.
CHURN = textwrap.dedent("""
    import ctypes, json, threading
    import keras_bert
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    SIZE = 96 << 20

    def minor_faults():
        with open("/proc/self/stat") as stat:
            return int(stat.read().rsplit(")", 1)[1].split()[7])

    def churn(rounds):
        for _ in range(rounds):
            block = libc.malloc(SIZE)
            ctypes.memset(block, 1, SIZE)
            libc.free(block)

    faults = {}

    def measure(where):
        churn(1)
        before = minor_faults()
        churn(3)
        faults[where] = (minor_faults() - before) / 3

    measure("main")
    worker = threading.Thread(target=measure, args=("thread",))
    worker.start()
    worker.join()
    print(json.dumps(faults))
""")

PAGES = (96 << 20) // 4096


def _glibc():
    try:
        return hasattr(ctypes.CDLL(None), "gnu_get_libc_version")
    except OSError:
        return False


def _faults_per_round(**variables):
    env = dict(os.environ)
    env.pop(memory.OPT_OUT_VARIABLE, None)
    env.pop("GLIBC_TUNABLES", None)
    env.update(variables)
    result = subprocess.run([sys.executable, "-c", CHURN], env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


glibc_only = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not _glibc(),
    reason="mallopt and GLIBC_TUNABLES are glibc's")


@glibc_only
def test_freed_blocks_are_reused_without_page_faults():
    tuned = _faults_per_round()
    default = _faults_per_round(**{memory.OPT_OUT_VARIABLE: "0"})
    # glibc's defaults fault in (nearly) every page of the block each round;
    # after keras_bert's settings a round reuses pages already faulted in.
    assert default["main"] > PAGES / 2, default
    assert default["thread"] > PAGES / 2, default
    assert tuned["main"] < PAGES / 20, tuned
    assert tuned["thread"] < PAGES / 20, tuned


@glibc_only
def test_glibc_tunables_string_gives_the_same_settings():
    # What the docs tell users of other programs to set: it must do what
    # tune_malloc does, with keras_bert's own call turned off.
    faults = _faults_per_round(**{memory.OPT_OUT_VARIABLE: "0",
                                  "GLIBC_TUNABLES": memory.GLIBC_TUNABLES})
    assert faults["main"] < PAGES / 20, faults
    assert faults["thread"] < PAGES / 20, faults


def test_opt_out_variable_leaves_malloc_alone(monkeypatch):
    monkeypatch.setenv(memory.OPT_OUT_VARIABLE, "0")
    monkeypatch.setattr(memory, "tune_malloc", lambda: pytest.fail(
        "tune_malloc ran although KERAS_BERT_TUNE_MALLOC=0"))
    assert memory.tune_malloc_unless_opted_out() is False
