"""How the `keras-bert` program ends: without the interpreter's teardown.

When a command has returned, its answer is printed and every file it
wrote is closed. What is left of the process's end is the interpreter's
teardown: every module's namespace cleared, the objects left collected,
the destructors of the frameworks' C++ libraries run. With TensorFlow
loaded that takes about as long as a one-line prediction
(docs/performance.md, "Cold start"), while the shell waits. So the
program runs the steps of an orderly exit that someone may depend on
(the `atexit` functions, which also save coverage data and flush
logging; then the standard streams), and ends with `os._exit`.

It does not when a thread other than the main one is still running (the
interpreter would wait for it), or where this Python cannot run the
`atexit` functions early (`_compat.process_exit`): then the process ends
as any other. Only the program ends this way; `keras_bert.cli.main`,
which tests and other Python code call, returns its status as before.
"""

import contextlib
import os
import sys
import threading

from keras_bert._compat.process_exit import run_exit_functions


def _other_threads_running():
    return any(thread.is_alive() and not thread.daemon
               for thread in threading.enumerate()
               if thread is not threading.main_thread())


def exit_program(status):
    """Ends the process with `status` (an int), skipping the interpreter's
    teardown where nothing depends on it; otherwise `sys.exit(status)`."""
    if _other_threads_running() or not run_exit_functions():
        sys.exit(status)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a closed pipe loses nothing
            stream.flush()
    os._exit(status)
