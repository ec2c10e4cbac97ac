"""Export targets: no clobbering, no half-written exports, clear errors."""

import os
from unittest import mock

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.export import export_onnx
from keras_bert.export import export_saved_model
from keras_bert.models.bert_backbone import BertBackbone
from keras_bert.models.bert_classifier import BertClassifier
from tests.export import export_test_utils as utils
from tests.test_case import TestCase
from tests.test_case import skip_unless_backend


def _packed_batch():
    token_ids = np.array([[2, 40, 41, 3, 0], [2, 42, 3, 43, 3]], "int32")
    return {"token_ids": token_ids,
            "segment_ids": np.array([[0] * 5, [0, 0, 0, 1, 1]], "int32"),
            "padding_mask": (token_ids > 0).astype("int32")}


class ExportPathTest(TestCase):

    def setUp(self):
        super().setUp()
        self.parent = self.get_temp_dir()
        self.target = os.path.join(self.parent, "exported")
        self.regressor = BertClassifier(utils.tiny_backbone(), num_classes=1,
                                        dropout=0.0)

    def _siblings(self):
        return sorted(os.listdir(self.parent))

    def test_existing_path_is_refused_without_overwrite(self):
        os.makedirs(self.target)
        with open(os.path.join(self.target, "saved_model.pb"), "w") as f:
            f.write("an older export")
        with pytest.raises(FileExistsError, match="overwrite=True"):
            export_saved_model(self.regressor, self.target,
                               include_preprocessing=False)
        onnx_file = os.path.join(self.parent, "model.onnx")
        open(onnx_file, "w").close()
        with pytest.raises(FileExistsError, match="overwrite=True"):
            export_onnx(self.regressor, onnx_file)
        with open(os.path.join(self.target, "saved_model.pb")) as f:
            self.assertEqual(f.read(), "an older export")

    def test_overwrite_never_replaces_what_is_not_an_export(self):
        os.makedirs(self.target)
        open(os.path.join(self.target, "notes.txt"), "w").close()
        with pytest.raises(FileExistsError, match="not a SavedModel"):
            export_saved_model(self.regressor, self.target, overwrite=True,
                               include_preprocessing=False)
        with pytest.raises(IsADirectoryError, match="single file"):
            export_onnx(self.regressor, self.target, overwrite=True)
        self.assertEqual(os.listdir(self.target), ["notes.txt"])

    def test_arguments_are_checked_before_exporting(self):
        with pytest.raises(TypeError, match="BertClassifier"):
            export_saved_model(keras.Sequential([keras.layers.Dense(1)]),
                               self.target)
        with pytest.raises(ValueError, match="preprocessor"):
            export_saved_model(self.regressor, self.target)
        with pytest.raises(ValueError, match="text_inputs"):
            export_saved_model(self.regressor, self.target,
                               preprocessor=utils.tokenizer(),
                               text_inputs=("a", "b", "c"))
        mixed = BertClassifier(
            BertBackbone(
                vocabulary_size=30, num_layers=1, num_heads=2, hidden_dim=8,
                intermediate_dim=16, dtype="mixed_bfloat16"),
            num_classes=2)
        with pytest.raises(ValueError, match="float32"):
            export_onnx(mixed, os.path.join(self.parent, "m.onnx"))
        self.assertEqual(self._siblings(), [])

    @skip_unless_backend("tensorflow")
    def test_failed_export_leaves_the_target_as_it_was(self):
        def write_half_then_fail(archive, export_dir, **kwargs):
            with open(os.path.join(export_dir, "saved_model.pb"), "w") as f:
                f.write("half")
            raise OSError("disk full")

        # The backend's archive class, whose write_out the export calls.
        archive_class = type(keras.export.ExportArchive())
        failing_write = mock.patch.object(archive_class, "write_out",
                                          write_half_then_fail)
        with failing_write, pytest.raises(OSError, match="disk full"):
            export_saved_model(self.regressor, self.target,
                               include_preprocessing=False)
        self.assertEqual(self._siblings(), [])

        export_saved_model(self.regressor, self.target,
                           include_preprocessing=False)
        with failing_write, pytest.raises(OSError, match="disk full"):
            export_saved_model(self.regressor, self.target, overwrite=True,
                               include_preprocessing=False)
        self.assertEqual(self._siblings(), ["exported"])
        loaded = tf.saved_model.load(self.target)
        self.assertIn("serving_packed", loaded.signatures)

    @skip_unless_backend("tensorflow")
    def test_overwrite_replaces_an_export_with_packed_signatures(self):
        batch = _packed_batch()
        for model in (self.regressor,
                      BertClassifier(utils.tiny_backbone(), num_classes=1)):
            export_saved_model(model, self.target, overwrite=True,
                               include_preprocessing=False)
            serve = tf.saved_model.load(self.target).signatures[
                "serving_default"]
            self.assertEqual(
                sorted(serve.structured_input_signature[1]),
                ["padding_mask", "segment_ids", "token_ids"])
            outputs = serve(**{k: tf.constant(v) for k, v in batch.items()})
            expected = keras.ops.convert_to_numpy(model(batch))
            self.assertAllClose(outputs["scores"], expected[:, 0], atol=1e-5)
        self.assertEqual(self._siblings(), ["exported"])
