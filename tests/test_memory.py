"""Freed memory stays in the process after `keras_bert.tune_malloc()`
(glibc), which the `keras-bert` commands call; `import keras_bert` alone
leaves the allocator as it was."""

import ctypes
import json
import os
import subprocess
import sys
import textwrap

import pytest

from keras_bert import cli
from keras_bert import memory

# A fresh process runs SETUP (argv[1]), then frees and re-allocates a 96 MiB
# block, touching every page, on the main thread and on a new thread (as
# XLA's executor does): with glibc's defaults each round maps fresh pages
# and faults them in again.
CHURN = textwrap.dedent("""
    import ctypes, json, sys, threading
    exec(sys.argv[1])
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


IMPORT = "import keras_bert"
TUNE = "import keras_bert; keras_bert.tune_malloc()"


def _faults_per_round(setup, **variables):
    env = dict(os.environ)
    env.pop(memory.OPT_OUT_VARIABLE, None)
    env.pop("GLIBC_TUNABLES", None)
    env.update(variables)
    result = subprocess.run([sys.executable, "-c", CHURN, setup], env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


glibc_only = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not _glibc(),
    reason="mallopt and GLIBC_TUNABLES are glibc's")


@glibc_only
def test_import_leaves_malloc_alone_and_tune_malloc_reuses_blocks():
    imported = _faults_per_round(IMPORT)
    tuned = _faults_per_round(TUNE)
    # glibc's defaults fault in (nearly) every page of the block each round;
    # after keras_bert's settings a round reuses pages already faulted in.
    assert imported["main"] > PAGES / 2, imported
    assert imported["thread"] > PAGES / 2, imported
    assert tuned["main"] < PAGES / 20, tuned
    assert tuned["thread"] < PAGES / 20, tuned


@glibc_only
def test_glibc_tunables_string_gives_the_same_settings():
    # What the docs tell users of other programs to set: it must do what
    # tune_malloc does.
    faults = _faults_per_round(IMPORT,
                               GLIBC_TUNABLES=memory.GLIBC_TUNABLES)
    assert faults["main"] < PAGES / 20, faults
    assert faults["thread"] < PAGES / 20, faults


def test_opt_out_variable_leaves_malloc_alone(monkeypatch):
    monkeypatch.setenv(memory.OPT_OUT_VARIABLE, "0")
    monkeypatch.setattr(memory, "tune_malloc", lambda: pytest.fail(
        "tune_malloc ran although KERAS_BERT_TUNE_MALLOC=0"))
    assert memory.tune_malloc_unless_opted_out() is False


def test_commands_tune_malloc_before_they_run(monkeypatch):
    calls = []
    monkeypatch.setattr(cli, "tune_malloc_unless_opted_out",
                        lambda: calls.append("tune_malloc"))
    parser = cli.build_parser()
    subparsers = next(action for action in parser._actions
                      if action.dest == "command")
    subparsers.add_parser("probe").set_defaults(
        func=lambda args: calls.append("command"))
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    assert cli.main(["--verbose", "probe"]) == 0
    assert calls == ["tune_malloc", "command"]
    calls.clear()
    cli.main([])  # no command: help only
    assert calls == []
