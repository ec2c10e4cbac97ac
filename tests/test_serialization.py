"""Keras finds every keras_bert class although `import keras_bert` imports
none of them: `.keras` files load in a fresh process once keras_bert has
met Keras (imported after Keras, a public name used, or any module that
builds models imported), and importing keras_bert changes nothing in the
import system."""

import importlib
import inspect
import os
import pkgutil
import subprocess
import sys

import keras
import numpy as np
import pytest

import keras_bert
from keras_bert import serialization
from keras_bert.models.bert_backbone import BertBackbone
from keras_bert.models.bert_classifier import BertClassifier
from keras_bert.models.bert_question_answerer import BertQuestionAnswerer
from keras_bert.preprocessing import BertPreprocessor
from keras_bert.preprocessing import BertTokenizer
from tests.test_case import TestCase
from tests.test_case import to_numpy
from tests.training.toy_corpus import toy_vocabulary

# How a fresh process meets keras_bert before loading: the statements run.
_MEETINGS = {
    "keras_bert after keras": "import keras; import keras_bert",
    "a name used": "import keras_bert; import keras; keras_bert.BertBackbone",
    "a model module": "import keras; import keras_bert.models.bert_classifier",
}

# argv: the statements to run first and the directory holding the saved
# files. Prints one line per loaded file.
_LOAD_SCRIPT = """
import os, sys
meeting, directory = sys.argv[1:]
exec(meeting)
import keras
import numpy as np
# Nothing of keras_bert in the import system, nor in how Keras was loaded.
assert not [finder for finder in sys.meta_path
            if type(finder).__module__.startswith("keras_bert")]
assert not keras.__spec__.loader.exec_module.__module__.startswith(
    "keras_bert")
inputs = dict(np.load(os.path.join(directory, "inputs.npz")))
for name in ("backbone", "classifier", "question_answerer"):
    model = keras.saving.load_model(os.path.join(directory, name + ".keras"))
    outputs = model(inputs)
    if name == "backbone":
        outputs = outputs["sequence_output"]
    expected = np.load(os.path.join(directory, name + ".npy"))
    difference = np.max(np.abs(keras.ops.convert_to_numpy(outputs) - expected))
    optimizer = getattr(model, "optimizer", None)
    preprocessor = getattr(model, "preprocessor", None)
    print(name, type(model).__module__, type(optimizer).__module__,
          type(preprocessor).__name__, float(difference))
"""


def _registered_keras_bert_objects():
    """Every keras_bert class or function in Keras' registry, after
    importing every keras_bert module."""
    for module in pkgutil.walk_packages(keras_bert.__path__, "keras_bert."):
        importlib.import_module(module.name)
    return {name.split(">", 1)[1]: value
            for name, value in keras.saving.get_custom_objects().items()
            if name.startswith("keras_bert>")}


class RegisteredClassesTest(TestCase):
    def test_every_registered_class_is_listed_with_its_module(self):
        registered = _registered_keras_bert_objects()
        classes = {name: obj.__module__ for name, obj in registered.items()
                   if inspect.isclass(obj)}
        self.assertEqual(classes, serialization.REGISTERED_CLASSES)
        # A registered function loads with a listed class from its module.
        functions = {obj.__module__ for obj in registered.values()
                     if not inspect.isclass(obj)}
        self.assertLessEqual(
            functions, set(serialization.REGISTERED_CLASSES.values()))

    def test_stand_in_builds_the_real_class(self):
        stand_in = serialization._DeferredClass(
            "keras_bert.models.bert_backbone", "BertBackbone")
        config = tiny_backbone().get_config()
        self.assertIsInstance(stand_in.from_config(config), BertBackbone)
        self.assertIn("not imported", repr(stand_in))


def tiny_backbone():
    return BertBackbone(
        vocabulary_size=len(toy_vocabulary()), num_layers=1, num_heads=2,
        hidden_dim=16, intermediate_dim=32, max_sequence_length=16)


class FreshProcessLoadTest(TestCase):
    @pytest.mark.slow
    def test_keras_files_load_after_a_bare_import(self):
        directory = self.get_temp_dir()
        preprocessor = BertPreprocessor(BertTokenizer(toy_vocabulary()), 16)
        inputs = {k: np.asarray(to_numpy(v)) for k, v in preprocessor(
            ["w1 w2 w3 .", "w4 w5"]).items()}
        np.savez(os.path.join(directory, "inputs.npz"), **inputs)
        backbone = tiny_backbone()
        classifier = BertClassifier(backbone, num_classes=3,
                                    preprocessor=preprocessor)
        answerer = BertQuestionAnswerer(tiny_backbone())
        for model in (classifier, answerer):
            # The recipe's AdamW and schedule are keras_bert classes too.
            model.compile(learning_rate=1e-4, num_train_steps=10)
        models = {"backbone": backbone, "classifier": classifier,
                  "question_answerer": answerer}
        for name, model in models.items():
            model.save(os.path.join(directory, name + ".keras"))
            outputs = model(inputs)
            if name == "backbone":
                outputs = outputs["sequence_output"]
            np.save(os.path.join(directory, name + ".npy"), to_numpy(outputs))

        for first, meeting in _MEETINGS.items():
            result = subprocess.run(
                [sys.executable, "-c", _LOAD_SCRIPT, meeting, directory],
                capture_output=True, text=True, timeout=300,
                cwd=os.path.dirname(os.path.dirname(keras_bert.__file__)))
            self.assertEqual(result.returncode, 0, result.stderr[-3000:])
            lines = {line.split()[0]: line.split()[1:]
                     for line in result.stdout.splitlines()}
            self.assertEqual(set(lines), set(models))
            self.assertEqual(lines["backbone"][0],
                             "keras_bert.models.bert_backbone")
            self.assertEqual(lines["classifier"][:3], [
                "keras_bert.models.bert_classifier",
                "keras_bert.optimizers.adamw", "BertPreprocessor"])
            self.assertEqual(lines["question_answerer"][:2], [
                "keras_bert.models.bert_question_answerer",
                "keras_bert.optimizers.adamw"])
            for name, fields in lines.items():
                self.assertLess(float(fields[-1]), 1e-5, (first, name))
