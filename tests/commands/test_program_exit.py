"""How the `keras-bert` program ends (`keras_bert/commands/program_exit.py`):
its status, output and `atexit` functions as in any exit, the interpreter's
teardown skipped, and an ordinary exit while another thread runs."""

import os
import subprocess
import sys
import tempfile

from tests.test_case import TestCase

# Stands for what a user's process holds at the end: an `atexit` function
# (coverage's, logging's), output still in Python's buffer, and an object
# whose finalizer only the interpreter's teardown runs. Then the program.
_CHILD = """
import atexit, sys, threading, time
marker = sys.argv[1]
atexit.register(lambda: open(marker, "w").write("atexit ran"))

class Teardown:
    def __del__(self):
        sys.stdout.write("teardown ran\\n")
        sys.stdout.flush()

kept = Teardown()
sys.stdout.write("buffered line\\n")
if sys.argv[2] == "thread":
    threading.Thread(target=time.sleep, args=(0.3,)).start()
sys.argv = ["keras-bert", *sys.argv[3:]]
from keras_bert import cli
cli.program()
"""


def run_program(*argv, thread=False):
    """(exit status, stdout, whether the atexit function ran)."""
    with tempfile.TemporaryDirectory() as directory:
        marker = os.path.join(directory, "marker")
        result = subprocess.run(
            [sys.executable, "-c", _CHILD, marker,
             "thread" if thread else "-", *argv],
            capture_output=True, text=True, timeout=120,
            env={**os.environ, "PYTHONPATH": os.getcwd()})
        ran = os.path.exists(marker)
    return result.returncode, result.stdout, ran


class ProgramExitTest(TestCase):
    def test_status_output_and_exit_functions_without_teardown(self):
        status, stdout, ran = run_program()  # no command: help, status 0
        self.assertEqual(status, 0)
        self.assertIn("buffered line", stdout)
        self.assertIn("usage: keras-bert", stdout)
        self.assertTrue(ran)
        self.assertNotIn("teardown ran", stdout)

    def test_a_failing_commands_status(self):
        status, _, ran = run_program("embed", "no-such-file.txt")
        self.assertEqual(status, 2)
        self.assertTrue(ran)

    def test_an_ordinary_exit_while_another_thread_runs(self):
        status, stdout, ran = run_program(thread=True)
        self.assertEqual(status, 0)
        self.assertTrue(ran)
        self.assertIn("teardown ran", stdout)
