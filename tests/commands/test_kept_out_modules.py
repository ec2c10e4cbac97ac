"""The modules a `keras-bert` command keeps out of its process
(`keras_bert/commands/kept_out_modules.py`): which, for which command and
backend; that a real command runs, and answers as the Python API does,
without them; and that they import again once it returns."""

import ast
import os
import shutil
import subprocess
import sys
import tempfile
import types

import keras
import numpy as np

from keras_bert.commands.kept_out_modules import kept_out
from keras_bert.commands.kept_out_modules import modules_to_keep_out
from tests.commands.cli_helpers import write_toy_pretrainer_preset
from tests.test_case import TestCase

OPTIONAL = ("sklearn", "matplotlib", "jax")

# Runs `keras-bert ARGV...` in-process, then prints which of the optional
# modules it left imported and whether each imports after it returned.
_SCRIPT = f"""
import importlib, sys
from keras_bert import cli
status = cli.main(sys.argv[1:])
imported = sorted(m for m in {OPTIONAL!r} if sys.modules.get(m))
importable = []
for name in {OPTIONAL!r}:
    try:
        importlib.import_module(name)
        importable.append(name)
    except ImportError:
        pass
print("STATUS", status)
print("IMPORTED", imported)
print("IMPORTABLE", importable)
"""


class ModulesToKeepOutTest(TestCase):
    def test_by_command_and_backend(self):
        self.assertEqual(modules_to_keep_out("embed", "torch"),
                         ("sklearn", "matplotlib", "jax"))
        self.assertEqual(modules_to_keep_out("fill-mask", "tensorflow"),
                         ("sklearn", "matplotlib", "jax"))
        self.assertEqual(modules_to_keep_out("predict", "jax"),
                         ("sklearn", "matplotlib"))
        # Loss curves need matplotlib; Keras' default backend may be set in
        # keras.json, so JAX stays importable without KERAS_BACKEND.
        self.assertEqual(modules_to_keep_out("pretrain", "torch"),
                         ("sklearn", "jax"))
        self.assertEqual(modules_to_keep_out("finetune", None), ("sklearn",))

    def test_kept_out_only_within_the_block(self):
        name = "keras_bert_test_module_kept_out"
        sys.modules.pop(name, None)
        with kept_out([name]):
            with self.assertRaises(ImportError):
                __import__(name)
        self.assertNotIn(name, sys.modules)

    def test_imported_modules_stay(self):
        name = "keras_bert_test_module_already_here"
        module = types.ModuleType(name)
        sys.modules[name] = module
        try:
            with kept_out([name]):
                self.assertIs(__import__(name), module)
            self.assertIs(sys.modules[name], module)
        finally:
            del sys.modules[name]

    def test_an_import_made_in_the_block_by_someone_else_stays(self):
        # A module that replaced the None entry is a real import: kept.
        name = "keras_bert_test_module_replaced"
        module = types.ModuleType(name)
        with kept_out([name]):
            sys.modules[name] = module
        try:
            self.assertIs(sys.modules[name], module)
        finally:
            del sys.modules[name]


class CommandWithoutThemTest(TestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.root = tempfile.mkdtemp()
        cls.preset, cls.pretrainer, cls.tokenizer = (
            write_toy_pretrainer_preset(cls.root))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root, ignore_errors=True)
        super().tearDownClass()

    def test_embed_runs_without_them_and_they_import_afterwards(self):
        texts = os.path.join(self.root, "texts.txt")
        with open(texts, "w") as f:
            f.write("w1 w2 w3 .\nw3 w2 .\n")
        output = os.path.join(self.root, "texts.npy")
        backend = keras.config.backend()
        result = subprocess.run(
            [sys.executable, "-c", _SCRIPT, "embed", texts, "--model",
             self.preset, "--output", output],
            capture_output=True, text=True, timeout=600,
            env={**os.environ, "KERAS_BACKEND": backend})
        lines = dict(line.split(" ", 1) for line in result.stdout.splitlines()
                     if line.startswith(("STATUS", "IMPORTED", "IMPORTABLE")))
        self.assertEqual(lines.get("STATUS"), "0", result.stderr)
        expected_out = set(modules_to_keep_out("embed", backend))
        imported = set(ast.literal_eval(lines["IMPORTED"]))
        self.assertEqual(imported & expected_out, set())
        if backend == "jax":
            self.assertIn("jax", imported)
        # Kept out for the command only: installed ones import again.
        installed = {name for name in OPTIONAL
                     if self._installed(name)}
        self.assertEqual(set(ast.literal_eval(lines["IMPORTABLE"])),
                         installed)
        # The same vectors as the Python API's.
        from keras_bert import BertTextEmbedder

        embedder = BertTextEmbedder.from_preset(self.preset)
        np.testing.assert_allclose(
            np.load(output), embedder.encode(["w1 w2 w3 .", "w3 w2 ."]),
            atol=1e-6)

    @staticmethod
    def _installed(name):
        import importlib.util

        return importlib.util.find_spec(name) is not None
