"""Every bad-input case of issue 4 gives a specific, actionable error."""

import json
import os

import numpy as np
import pytest

import keras_bert
from keras_bert.checkpoints import CheckpointError
from keras_bert import checkpoints
from keras_bert.checkpoints import load_checkpoint_weights
from keras_bert.checkpoints.config_conversion import (
    backbone_kwargs_from_bert_config,
)
from tests.checkpoints import reference_checkpoints as ref
from tests.test_case import TestCase
from tests.test_case import to_numpy


def load_backbone(path, **kwargs):
    return checkpoints.load_backbone(keras_bert.BertBackbone, path, **kwargs)


def edit_json(filename, **changes):
    with open(filename) as f:
        data = json.load(f)
    data.update(changes)
    with open(filename, "w") as f:
        json.dump(data, f)


def rewrite_safetensors(directory, edit):
    """Rewrites model.safetensors after `edit(tensors)` (a dict, in place)."""
    from safetensors.numpy import load_file
    from safetensors.numpy import save_file

    filename = os.path.join(directory, "model.safetensors")
    tensors = load_file(filename)
    edit(tensors)
    save_file(tensors, filename, metadata={"format": "pt"})


class DirectoryErrorsTest(TestCase):
    def test_missing_directory(self):
        missing = os.path.join(self.get_temp_dir(), "nowhere")
        with self.assertRaisesRegex(CheckpointError,
                                    "(?s)does not exist.*bert_config.json"):
            load_backbone(missing)
        with self.assertRaisesRegex(CheckpointError, "no such directory"):
            keras_bert.BertPretrainer.from_preset(missing)

    def test_unknown_layout_lists_found_and_expected(self):
        directory = self.get_temp_dir()
        for name in ("weights.npz", "readme.md"):
            open(os.path.join(directory, name), "w").close()
        with self.assertRaises(CheckpointError) as context:
            keras_bert.BertBackbone.from_preset(directory)
        message = str(context.exception)
        for expected in ("readme.md, weights.npz", "model.safetensors",
                         "bert_model.ckpt.index", "model.weights.h5"):
            self.assertIn(expected, message)

    def test_file_instead_of_directory(self):
        filename = os.path.join(self.get_temp_dir(), "model.safetensors")
        open(filename, "w").close()
        with self.assertRaisesRegex(CheckpointError, "is a file"):
            load_backbone(filename)

    def test_config_without_weights(self):
        directory = self.get_temp_dir()
        ref.make_huggingface("BertModel", directory)
        os.remove(os.path.join(directory, "model.safetensors"))
        with self.assertRaisesRegex(CheckpointError,
                                    "no weights.*config.json, vocab.txt"):
            load_backbone(directory)
        # The architecture alone needs no weights.
        self.assertEqual(load_backbone(directory, load_weights=False)
                         .hidden_dim, 16)

    def test_google_directory_without_checkpoint(self):
        directory = self.get_temp_dir()
        with open(os.path.join(directory, "bert_config.json"), "w") as f:
            json.dump({"vocab_size": 10, "hidden_size": 8,
                       "num_hidden_layers": 1, "num_attention_heads": 2,
                       "intermediate_size": 8}, f)
        with self.assertRaisesRegex(CheckpointError,
                                    "no bert_model.ckpt.index"):
            load_backbone(directory)

    def test_keras_preset_without_weights(self):
        directory = os.path.join(self.get_temp_dir(), "preset")
        keras_bert.BertBackbone(vocabulary_size=10, num_layers=1, num_heads=2,
                                hidden_dim=8, intermediate_dim=8,
                                ).save_to_preset(directory)
        os.remove(os.path.join(directory, "model.weights.h5"))
        with self.assertRaisesRegex(CheckpointError,
                                    "without model.weights.h5"):
            load_backbone(directory)


    def test_preset_loader_refuses_another_layout(self):
        directory = self.get_temp_dir()
        ref.make_huggingface("BertModel", directory)
        with self.assertRaisesRegex(
                CheckpointError, "is a Hugging Face checkpoint, not a "
                "keras_bert preset.*BertBackbone.from_preset"):
            checkpoints.load_preset_model(directory)


class ConfigErrorsTest(TestCase):
    def setUp(self):
        super().setUp()
        self.config = {
            "vocab_size": 30, "hidden_size": 16, "num_hidden_layers": 2,
            "num_attention_heads": 2, "intermediate_size": 32,
        }

    def test_activation_names(self):
        for hidden_act, activation in [
            ("gelu", "gelu"), ("gelu_new", "gelu_approximate"),
            ("gelu_pytorch_tanh", "gelu_approximate"), ("relu", "relu"),
            ("silu", "silu"),
        ]:
            kwargs = backbone_kwargs_from_bert_config(
                {**self.config, "hidden_act": hidden_act})
            self.assertEqual(kwargs["activation"], activation)

    def test_unsupported_values(self):
        for field, value, pattern in [
            ("position_embedding_type", "relative_key",
             "position_embedding_type='relative_key'"),
            ("is_decoder", True, "is_decoder=True"),
            ("add_cross_attention", True, "add_cross_attention=True"),
            ("hidden_act", "gelu_10", "hidden_act='gelu_10'.*Supported"),
        ]:
            with self.assertRaisesRegex(CheckpointError, pattern):
                backbone_kwargs_from_bert_config({**self.config, field: value})

    def test_missing_fields(self):
        del self.config["hidden_size"]
        with self.assertRaisesRegex(CheckpointError, r"\['hidden_size'\]"):
            backbone_kwargs_from_bert_config(self.config)

    def test_non_bert_model_type(self):
        directory = self.get_temp_dir()
        ref.make_huggingface("BertModel", directory)
        edit_json(os.path.join(directory, "config.json"),
                  model_type="roberta")
        with self.assertRaisesRegex(CheckpointError, "'roberta'"):
            load_backbone(directory)

    def test_relative_positions_in_directory(self):
        directory = self.get_temp_dir()
        ref.make_huggingface("BertModel", directory)
        edit_json(os.path.join(directory, "config.json"),
                  position_embedding_type="relative_key_query")
        with self.assertRaisesRegex(CheckpointError,
                                    "position_embedding_type"):
            load_backbone(directory)


class WeightErrorsTest(TestCase):
    def setUp(self):
        super().setUp()
        self.directory = self.get_temp_dir()
        ref.make_huggingface("BertModel", self.directory)

    def test_shape_mismatch_names_variable_and_leaves_weights(self):
        backbone = keras_bert.BertBackbone(
            vocabulary_size=len(ref.VOCABULARY), num_layers=2, num_heads=2,
            hidden_dim=16, intermediate_dim=24, max_sequence_length=24)
        before = [to_numpy(w) for w in backbone.weights]
        with self.assertRaises(CheckpointError) as context:
            load_checkpoint_weights(backbone, self.directory)
        message = str(context.exception)
        self.assertIn("transformer_layer_0/intermediate_dense/kernel: model "
                      "shape (16, 24)", message)
        self.assertIn("encoder.layer.0.intermediate.dense.weight (32, 16)",
                      message)
        for old, new in zip(before, backbone.weights):
            np.testing.assert_array_equal(old, to_numpy(new))

    def test_shape_mismatch_through_override(self):
        with self.assertRaisesRegex(
            CheckpointError,
            r"(?s)Shape mismatch.*embeddings/position_embeddings: model "
            r"shape \(16, 16\), checkpoint embeddings.position_embeddings"
            r".weight \(24, 16\)"):
            load_backbone(self.directory, max_sequence_length=16)

    def test_missing_and_unexpected_keys_strict_and_not(self):
        def edit(tensors):
            del tensors["encoder.layer.1.output.dense.bias"]
            del tensors["embeddings.LayerNorm.weight"]
            tensors["encoder.layer.1.adapter.weight"] = np.zeros(
                (2, 2), "float32")

        rewrite_safetensors(self.directory, edit)
        with self.assertRaises(CheckpointError) as context:
            load_backbone(self.directory)
        message = str(context.exception)
        for key in ("encoder.layer.1.output.dense.bias",
                    "embeddings.LayerNorm.weight",
                    "encoder.layer.1.adapter.weight", "Missing (2)",
                    "Unexpected (1)", "strict=False"):
            self.assertIn(key, message)

        with self.assertLogs("keras_bert.checkpoints", "WARNING") as logs:
            backbone = load_backbone(self.directory, strict=False)
        self.assertIn("encoder.layer.1.adapter.weight",
                      "\n".join(logs.output))
        # What was present was loaded.
        from safetensors.numpy import load_file

        stored = load_file(os.path.join(self.directory, "model.safetensors"))
        np.testing.assert_array_equal(
            to_numpy(backbone.get_layer("embeddings").layer_norm.beta),
            stored["embeddings.LayerNorm.bias"])

    def test_untied_decoder_is_unexpected(self):
        directory = self.get_temp_dir()
        ref.make_huggingface("BertForPreTraining", directory)
        rewrite_safetensors(directory, lambda t: t.update({
            "cls.predictions.decoder.weight": np.ones(
                t["bert.embeddings.word_embeddings.weight"].shape, "float32")
        }))
        with self.assertRaisesRegex(CheckpointError,
                                    "cls.predictions.decoder.weight"):
            keras_bert.BertPretrainer.from_preset(directory)


class CorruptFilesTest(TestCase):
    def setUp(self):
        super().setUp()
        self.directory = self.get_temp_dir()
        ref.make_huggingface("BertModel", self.directory)
        self.weights = os.path.join(self.directory, "model.safetensors")

    def test_truncated_safetensors(self):
        size = os.path.getsize(self.weights)
        with open(self.weights, "r+b") as f:
            f.truncate(size - 100)
        with self.assertRaisesRegex(CheckpointError,
                                    "truncated.*the file has"):
            load_backbone(self.directory)

    def test_corrupt_safetensors_header(self):
        with open(self.weights, "r+b") as f:
            f.seek(8)
            f.write(b"\xff\xfe not json")
        with self.assertRaisesRegex(
                CheckpointError, "model.safetensors is truncated or not a "
                "safetensors file \\(invalid"):
            load_backbone(self.directory)

    def test_garbage_instead_of_safetensors(self):
        with open(self.weights, "wb") as f:
            f.write(b"<html>404</html>")
        with self.assertRaisesRegex(CheckpointError, "not a safetensors"):
            load_backbone(self.directory)

    def test_git_lfs_pointer(self):
        with open(self.weights, "w") as f:
            f.write("version https://git-lfs.github.com/spec/v1\n"
                    "oid sha256:abc\nsize 90868376\n")
        with self.assertRaisesRegex(CheckpointError,
                                    "Git LFS pointer.*git lfs pull"):
            load_backbone(self.directory)

    def test_pickle_without_opt_in_never_opens_the_file(self):
        os.remove(self.weights)
        # A pickle whose loading would run code: it must not be opened.
        marker = os.path.join(self.directory, "ran")
        payload = (b"cos\nsystem\n(S'touch " + marker.encode()
                   + b"'\ntR.")
        with open(os.path.join(self.directory, "pytorch_model.bin"),
                  "wb") as f:
            f.write(payload)
        with self.assertRaisesRegex(CheckpointError,
                                    "safetensors.*allow_pickle=True"):
            load_backbone(self.directory)
        # Even with the opt-in, weights_only refuses to run the code.
        with self.assertRaisesRegex(CheckpointError, "weights_only=True"):
            load_backbone(self.directory, allow_pickle=True)
        self.assertFalse(os.path.exists(marker))

    @pytest.mark.large
    def test_truncated_real_checkpoint(self):
        import shutil

        directory = os.path.join(self.get_temp_dir(), "minilm")
        shutil.copytree(ref.MINILM_DIR, directory)
        weights = os.path.join(directory, "model.safetensors")
        with open(weights, "r+b") as f:
            f.truncate(os.path.getsize(weights) // 2)
        with self.assertRaisesRegex(CheckpointError, "truncated"):
            load_backbone(directory)
