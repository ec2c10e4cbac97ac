"""`keras-bert` as a user meets it, in fresh processes: `--help` loads no
backend, and a real command prints no TensorFlow/absl/CUDA log lines
unless `--verbose`. (How fast: bench/bench_cli_startup.py.)"""

import ast
import os
import re
import shutil
import subprocess
import sys
import tempfile

import pytest

from keras_bert import cli
from tests.commands.cli_helpers import write_toy_pretrainer_preset
from tests.test_case import TestCase

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(cli.__file__)))
BACKENDS = ("tensorflow", "keras", "jax", "torch")

# Runs `keras-bert ARGV...`, then prints which backend modules it imported.
_HELP_SCRIPT = f"""
import atexit, runpy, sys
# At the program's end, which runs the atexit functions (it then skips
# the interpreter's teardown: commands/program_exit.py).
atexit.register(lambda: print(
    "IMPORTED", sorted(m for m in {BACKENDS!r} if m in sys.modules)))
sys.argv = ["keras-bert"] + sys.argv[1:]
runpy.run_module("keras_bert.cli", run_name="__main__", alter_sys=True)
"""

# What TensorFlow, absl, CUDA, oneDNN and XLA print (examples in
# tests/commands/test_quiet_logs.py); none is the package's own output.
NOISE = re.compile(
    r"^[IWEF]\d{4} \d\d:\d\d:\d+\.\d+ +\d+ \S+:\d+\]"
    r"|absl::InitializeLog|port\.cc|cudart_stub|cpu_feature_guard"
    r"|oneDNN|cuInit|TF_ENABLE_ONEDNN_OPTS|^To enable the following",
    re.MULTILINE)


def command_names():
    subparsers = next(action for action in cli.build_parser()._actions
                      if action.dest == "command")
    return list(subparsers.choices)


def user_environment():
    """The test environment without the settings conftest adds to quiet
    TensorFlow: what a user's shell has."""
    return {k: v for k, v in os.environ.items()
            if k != "TF_CPP_MIN_LOG_LEVEL"}


def keras_bert_process(*argv, script=None, backend=None):
    environment = user_environment()
    if backend is not None:
        environment["KERAS_BACKEND"] = backend
    return subprocess.run(
        [sys.executable, *(["-c", script] if script else
                           ["-m", "keras_bert.cli"]), *argv],
        capture_output=True, text=True, timeout=600, cwd=REPOSITORY,
        env=environment)


class HelpTest(TestCase):
    def test_help_imports_no_backend(self):
        names = command_names()
        self.assertGreaterEqual(len(names), len(cli.COMMANDS))
        for argv in [["--help"]] + [[name, "--help"] for name in names]:
            with self.subTest(argv=argv):
                result = keras_bert_process(*argv, script=_HELP_SCRIPT)
                self.assertEqual(result.returncode, 0, result.stderr)
                usage, imported = result.stdout.rsplit("IMPORTED", 1)
                self.assertIn("usage: keras-bert", usage)
                self.assertEqual(ast.literal_eval(imported.strip()), [])
                self.assertEqual(result.stderr, "")

    def test_top_level_help_lists_verbose(self):
        result = keras_bert_process("--help")
        self.assertIn("--verbose", result.stdout)


class QuietCommandTest(TestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.root = tempfile.mkdtemp()
        cls.preset = write_toy_pretrainer_preset(cls.root)[0]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root, ignore_errors=True)
        super().tearDownClass()

    @pytest.mark.slow
    def test_fill_mask_prints_no_log_lines_but_its_errors(self):
        # The second text is refused after the model has loaded.
        result = keras_bert_process("fill-mask", self.preset,
                                    "w1 [MASK] w3 .", "no mask here")
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertRegex(result.stdout, r"\[MASK\] +1\. \S+")
        self.assertIn("error: The text has no [MASK] token", result.stderr)
        for stream in (result.stdout, result.stderr):
            self.assertIsNone(NOISE.search(stream), stream)

    @pytest.mark.slow
    def test_verbose_shows_them(self):
        # Under TensorFlow, whose start prints them: under JAX and PyTorch
        # fill-mask imports no TensorFlow, so there is nothing to show.
        result = keras_bert_process("--verbose", "fill-mask", self.preset,
                                    "w1 [MASK] w3 .", backend="tensorflow")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertRegex(result.stdout, r"\[MASK\] +1\. \S+")
        self.assertIsNotNone(NOISE.search(result.stderr), result.stderr)


class MistakesBeforeFrameworksTest(TestCase):
    """A missing file, a wrong column or an unknown model is reported the
    same way by every command, before any framework is imported."""

    def test_every_command_reports_bad_input_without_a_framework(self):
        root = tempfile.mkdtemp(dir=self.get_temp_dir())
        table = os.path.join(root, "data.tsv")
        with open(table, "w") as f:
            f.write("text\tlabel\na film\tpos\nthe plot\tneg\n")
        missing = os.path.join(root, "nope.tsv")
        no_model = os.path.join(root, "no-model")
        cases = [
            (["finetune", "--task", "classify", "--train", missing,
              "--validation", table, "--model", no_model, "--output",
              root], f"{missing}: no such file"),
            (["finetune", "--task", "classify", "--train", table,
              "--validation", table, "--model", no_model, "--output", root,
              "--text-column", "sentence"], "no column ['sentence']"),
            (["finetune", "--task", "classify", "--train", table,
              "--validation", table, "--model", no_model, "--output",
              root], "no such directory"),
            (["predict", "--model", no_model], "no such directory"),
            (["evaluate", "--model", no_model, "--data", table],
             "no such directory"),
            (["embed", missing, "--model", no_model],
             f"{missing}: no such file"),
            (["embed", table, "--column", "text", "--model", no_model],
             "no such directory"),
            (["fill-mask", no_model, "a [MASK]"], "no such directory"),
            (["export", no_model, os.path.join(root, "out"), "--format",
              "savedmodel"], "no such directory"),
            (["pretrain", "--corpus", missing, "--output",
              os.path.join(root, "run")], f"{missing}: no such file"),
            (["search", os.path.join(root, "index.npy"), "a query"],
             "index.npy not found"),
        ]
        for argv, message in cases:
            with self.subTest(argv=argv[0], message=message):
                result = keras_bert_process(*argv, script=_HELP_SCRIPT)
                output, imported = result.stdout.rsplit("IMPORTED", 1)
                self.assertEqual(ast.literal_eval(imported.strip()), [],
                                 result.stderr)
                self.assertEqual(result.stderr.count("\n"), 1,
                                 result.stderr)
                self.assertIn(f"keras-bert {argv[0]}: error:",
                              result.stderr)
                self.assertIn(message, result.stderr)
        self.assertFalse(os.path.exists(os.path.join(root, "run")))
