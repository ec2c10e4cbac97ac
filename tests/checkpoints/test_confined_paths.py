"""A file a checkpoint names stays inside its directory (issue 52, case 1).

Each hostile file names a "secret" of the test's own outside the preset,
laid out as a vocabulary would be (the special tokens first), which is
what let `/etc/passwd` be read as one: the load must fail by name, with no
line of the secret in the model or the message.
"""

import json
import os
import zipfile

import keras
import numpy as np

import keras_bert
from keras_bert.checkpoints import CheckpointError
from keras_bert.checkpoints import checkpoint_files
from keras_bert.checkpoints.confined_paths import confined_path
from tests.checkpoints import reference_checkpoints as ref
from tests.models.test_bert_text_embedder import (
    write_sentence_transformers_dir)
from tests.test_case import TestCase

SECRET = "games:x:5:60:games:/usr/games"


def write_secret(directory):
    path = os.path.join(directory, "passwd")
    with open(path, "w") as f:
        f.write("\n".join(ref.VOCABULARY[:5] + [SECRET]) + "\n")
    return path


def tiny_classifier():
    backbone = keras_bert.BertBackbone(
        vocabulary_size=len(ref.VOCABULARY), num_layers=1, num_heads=2,
        hidden_dim=8, intermediate_dim=16, max_sequence_length=24)
    tokenizer = keras_bert.BertTokenizer(ref.VOCABULARY)
    return keras_bert.BertClassifier(
        backbone, num_classes=2,
        preprocessor=keras_bert.BertPreprocessor(tokenizer, 8))


def hostile_keras_file(path, edit):
    """A copy of the `.keras` file `path` whose config.json is
    `edit(config)`; returns its path."""
    hostile = os.path.join(os.path.dirname(path), "hostile.keras")
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(
            hostile, "w") as target:
        for item in source.infolist():
            data = source.read(item)
            if item.filename == "config.json":
                data = json.dumps(edit(json.loads(data))).encode()
            target.writestr(item, data)
    return hostile


def name_vocabulary(config_file, name):
    """Points every "vocabulary" of a serialized model at `name`."""
    with open(config_file) as f:
        config = json.load(f)
    config = checkpoint_files.map_vocabularies(config, lambda _: name)
    with open(config_file, "w") as f:
        json.dump(config, f)


class ConfinedPathTest(TestCase):
    def test_names_inside_resolve(self):
        directory = self.get_temp_dir()
        os.makedirs(os.path.join(directory, "1_Pooling"))
        for name in ("vocab.txt", "1_Pooling", "1_Pooling/config.json", ""):
            self.assertEqual(confined_path(directory, name, "modules.json"),
                             os.path.normpath(os.path.join(directory, name)))

    def test_absolute_dotdot_and_symlinks_out_are_refused(self):
        outside = self.get_temp_dir()
        secret = write_secret(outside)
        directory = self.get_temp_dir()
        os.symlink(secret, os.path.join(directory, "vocab.txt"))
        os.symlink(outside, os.path.join(directory, "module"))
        for name, why in [(secret, "absolute path"),
                          ("../passwd", "'..' leads out"),
                          ("a/../../passwd", "'..' leads out"),
                          ("vocab.txt", "symlink"),
                          ("module/passwd", "symlink"),
                          (None, "relative file name")]:
            with self.assertRaisesRegex(CheckpointError, why):
                confined_path(directory, name, "config.json")

    def test_symlink_inside_is_followed(self):
        directory = self.get_temp_dir()
        open(os.path.join(directory, "real.txt"), "w").close()
        os.symlink("real.txt", os.path.join(directory, "vocab.txt"))
        self.assertTrue(os.path.isfile(
            confined_path(directory, "vocab.txt", "config.json")))

    def test_huggingface_cache_snapshot_symlinks_into_blobs(self):
        # huggingface_hub's cache: snapshots/<revision>/file -> ../../blobs/.
        repository = os.path.join(self.get_temp_dir(), "models--org--bert")
        blobs = os.path.join(repository, "blobs")
        snapshot = os.path.join(repository, "snapshots", "abc123")
        source = self.get_temp_dir()
        ref.make_huggingface("BertModel", source)
        os.makedirs(blobs)
        os.makedirs(snapshot)
        for index, name in enumerate(sorted(os.listdir(source))):
            os.rename(os.path.join(source, name),
                      os.path.join(blobs, str(index)))
            os.symlink(os.path.join("..", "..", "blobs", str(index)),
                       os.path.join(snapshot, name))
        self.assertTrue(confined_path(snapshot, "vocab.txt", "config.json"))
        backbone = keras_bert.BertBackbone.from_preset(snapshot)
        self.assertEqual(backbone.hidden_dim, 16)


class HostilePresetTest(TestCase):
    def setUp(self):
        super().setUp()
        self.outside = self.get_temp_dir()
        self.secret = write_secret(self.outside)
        self.preset = os.path.join(self.get_temp_dir(), "preset")
        tiny_classifier().save_to_preset(self.preset)
        self.config_file = os.path.join(self.preset, "config.json")

    def assertRefused(self, load, pattern):
        with self.assertRaisesRegex(CheckpointError, pattern) as context:
            load()
        self.assertNotIn(SECRET, str(context.exception))

    def test_preset_vocabulary_outside_is_refused_by_name(self):
        relative = os.path.relpath(self.secret, self.preset)
        for name in (self.secret, relative):
            name_vocabulary(self.config_file, name)
            self.assertRefused(
                lambda: keras_bert.BertClassifier.from_preset(self.preset),
                f"config.json \\(vocabulary\\) names '{name}', which is "
                "outside")

    def test_refused_before_the_file_is_opened(self):
        # A name that leads out is refused even when nothing is there, so
        # the refusal cannot depend on reading the file.
        name_vocabulary(self.config_file, "/nonexistent/vocab.txt")
        self.assertRefused(
            lambda: keras_bert.BertBackbone.from_preset(self.preset),
            "absolute path")

    def test_vocab_symlink_out_of_the_preset_is_refused(self):
        vocabulary = os.path.join(self.preset, "vocab.txt")
        os.remove(vocabulary)
        os.symlink(self.secret, vocabulary)
        self.assertRefused(
            lambda: keras_bert.BertClassifier.from_preset(self.preset),
            "symlink leads to")

    def test_weights_keeping_their_data_in_another_file(self):
        # CVE-2026-1669: an HDF5 dataset whose bytes are another file's.
        import h5py

        weights = os.path.join(self.preset, "model.weights.h5")
        group = ("layers/bert_backbone/layers/bert_embeddings/"
                 "token_embedding/vars")
        with h5py.File(weights, "r+") as f:
            path = f"{group}/{next(iter(f[group]))}"
            shape = f[path].shape
            del f[path]
            f.create_dataset(path, shape=shape, dtype="float32", external=[
                (self.secret, 0, 4 * int(np.prod(shape)))])
        self.assertRefused(
            lambda: keras_bert.BertClassifier.from_preset(self.preset),
            f"dataset {path} keeps its data in {self.secret} \\(HDF5 "
            "external storage\\)")

    def test_sentence_transformers_module_outside_is_refused(self):
        outside_model = os.path.join(self.outside, "outside_model")
        write_sentence_transformers_dir(outside_model)
        directory = self.get_temp_dir()
        write_sentence_transformers_dir(directory)
        modules_file = os.path.join(directory, "modules.json")
        with open(modules_file) as f:
            modules = json.load(f)
        modules[0]["path"] = os.path.relpath(outside_model, directory)
        with open(modules_file, "w") as f:
            json.dump(modules, f)
        self.assertRefused(
            lambda: keras_bert.BertTextEmbedder.from_preset(directory),
            "modules.json \\(Transformer path\\) names '../")

    def test_shard_outside_is_refused(self):
        directory = self.get_temp_dir()
        ref.make_huggingface("BertModel", directory)
        os.rename(os.path.join(directory, "model.safetensors"),
                  os.path.join(self.outside, "model.safetensors"))
        with open(os.path.join(directory, "model.safetensors.index.json"),
                  "w") as f:
            json.dump({"weight_map": {
                "embeddings.word_embeddings.weight":
                    "../" + os.path.basename(self.outside)
                    + "/model.safetensors"}}, f)
        self.assertRefused(
            lambda: keras_bert.BertBackbone.from_preset(directory),
            "index.json \\(weight_map\\) names")


class HostileKerasFileTest(TestCase):
    def test_tokenizer_path_in_a_keras_file_is_refused(self):
        secret = write_secret(self.get_temp_dir())
        path = os.path.join(self.get_temp_dir(), "model.keras")
        tiny_classifier().save(path)
        hostile = hostile_keras_file(path, lambda config: (
            checkpoint_files.map_vocabularies(config, lambda _: secret)))
        with self.assertRaises((TypeError, ValueError)) as context:
            keras.saving.load_model(hostile)
        message = str(context.exception)
        self.assertIn("could name any file on this machine", message)
        self.assertNotIn(SECRET, message)
        # The file the model was saved as still loads.
        model = keras.saving.load_model(path)
        self.assertEqual(model.preprocessor.tokenizer.get_vocabulary(),
                         ref.VOCABULARY)

    def test_a_path_from_python_stays_allowed(self):
        vocabulary = os.path.join(self.get_temp_dir(), "vocab.txt")
        with open(vocabulary, "w") as f:
            f.write("\n".join(ref.VOCABULARY) + "\n")
        tokenizer = keras_bert.BertTokenizer(vocabulary)
        np.testing.assert_array_equal(
            np.asarray(tokenizer("the cat")), [5, 7])
