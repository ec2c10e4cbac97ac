"""LoRA adapters saved and loaded alone (`save_lora_weights`,
`load_lora_weights`), on every backend.

What is checked: a task's adapters and heads go back onto the base model
and give the trained model's outputs, with LoRA enabled as saved (rank,
alpha, roles); a backbone takes a task's adapters; a file that does not
fit (other heads, another backbone, other LoRA settings, not a LoRA file,
truncated, wrong name) is refused by name and changes nothing; a failed
save leaves the previous file; predictions traced before LoRA was enabled
are traced again (TensorFlow would keep the old trace).
"""

import os
import stat
from unittest import mock

import keras
import numpy as np

from keras_bert import BertBackbone
from keras_bert import BertClassifier
from keras_bert import BertTextEmbedder
from keras_bert.checkpoints.checkpoint_error import CheckpointError
from keras_bert.models import lora_weights
from keras_bert.models.lora import lora_layers
from tests.models.tiny_models import TINY
from tests.models.tiny_models import move_lora_adapters
from tests.models.tiny_models import packed_inputs
from tests.test_case import TestCase
from tests.test_case import to_numpy

ROLES = ("query_key_value", "intermediate")


def _trained_classifier(num_classes=3):
    """A classifier with moved adapters and head, and its base weights."""
    keras.utils.set_random_seed(3)
    model = BertClassifier(BertBackbone(**TINY), num_classes=num_classes,
                           preprocessor=None)
    base = model.backbone.get_weights()
    model.backbone.enable_lora(2, target_names=ROLES, lora_alpha=8)
    move_lora_adapters(model)
    head = model.get_layer("classifier_head")
    head.kernel.assign(np.full(head.kernel.shape, 0.3, "float32"))
    return model, base


def _base_classifier(base, num_classes=3):
    keras.utils.set_random_seed(11)
    model = BertClassifier(BertBackbone(**TINY), num_classes=num_classes,
                           preprocessor=None)
    model.backbone.set_weights(base)
    return model


def _values(model):
    return [to_numpy(w) for w in model.weights]


class LoraWeightsTest(TestCase):

    def setUp(self):
        super().setUp()
        self.path = os.path.join(self.get_temp_dir(), "task.lora.safetensors")

    def test_a_task_goes_back_onto_its_base_model(self):
        trained, base = _trained_classifier()
        inputs = packed_inputs(batch=4)
        expected = to_numpy(trained.predict(inputs, verbose=0))
        trained.save_lora_weights(self.path)
        fresh = _base_classifier(base)
        # Traced before the load: the load must not serve this trace.
        before = to_numpy(fresh.predict(inputs, verbose=0))
        fresh.load_lora_weights(self.path)
        self.assertAllClose(fresh.predict(inputs, verbose=0), expected,
                            atol=1e-6)
        self.assertGreater(np.abs(before - expected).max(), 1e-3)
        qkv = fresh.backbone.get_layer(
            "transformer_layer_1").attention.query_key_value
        self.assertEqual((qkv.lora_rank, qkv.lora_alpha), (2, 8.0))
        self.assertEqual(len(lora_layers(fresh.backbone)), 2 * len(ROLES))
        mode = os.stat(self.path).st_mode
        umask = os.umask(0o022)
        os.umask(umask)
        self.assertEqual(stat.S_IMODE(mode), 0o666 & ~umask)

    def test_the_file_holds_adapters_and_heads_only(self):
        trained, _ = _trained_classifier()
        trained.save_lora_weights(self.path)
        from keras_bert.checkpoints.weight_files import read_safetensors

        names = sorted(read_safetensors(self.path))
        self.assertEqual(names, sorted(
            ["head/classifier_head/bias", "head/classifier_head/kernel"]
            + [f"transformer_layer_{i}/{role}/lora_kernel_{ab}"
               for i in range(2) for role in ROLES for ab in "ab"]))

    def test_a_backbone_takes_the_adapters_of_a_task_file(self):
        trained, base = _trained_classifier()
        trained.save_lora_weights(self.path)
        backbone = BertBackbone(**TINY)
        backbone.set_weights(base)
        backbone.load_lora_weights(self.path)
        inputs = packed_inputs(batch=4)
        self.assertAllClose(
            to_numpy(backbone(inputs)["pooled_output"]),
            to_numpy(trained.backbone(inputs)["pooled_output"]), atol=1e-6)
        # Only a model without weights of its own takes a backbone's file.
        backbone_file = os.path.join(self.get_temp_dir(),
                                     "backbone.lora.safetensors")
        backbone.save_lora_weights(backbone_file)
        embedder = BertTextEmbedder(backbone=BertBackbone(**TINY))
        embedder.load_lora_weights(backbone_file)
        self.assertEqual(len(lora_layers(embedder.backbone)), 4)
        classifier = _base_classifier(base)
        with self.assertRaisesRegex(ValueError, "missing head/classifier"):
            classifier.load_lora_weights(backbone_file)

    def test_a_file_that_does_not_fit_changes_nothing(self):
        trained, base = _trained_classifier()
        trained.save_lora_weights(self.path)
        hf_dir = os.path.join(self.get_temp_dir(), "hf")
        from keras_bert import export_to_huggingface

        export_to_huggingface(BertBackbone(**TINY), hf_dir)
        truncated = os.path.join(self.get_temp_dir(), "cut.lora.safetensors")
        with open(self.path, "rb") as f, open(truncated, "wb") as out:
            out.write(f.read()[:-40])
        other_shape = dict(TINY, num_layers=3)
        cases = [
            (_base_classifier(base, num_classes=4), self.path,
             r"wrong shape head/classifier_head/bias \(3,\) \(expected "
             r"\(4,\)\)"),
            (BertClassifier(BertBackbone(**other_shape), num_classes=3),
             self.path, "3 layers"),
            (_base_classifier(base), os.path.join(hf_dir, "model.safetensors"),
             "not a keras_bert LoRA file"),
            (_base_classifier(base), truncated, "truncated"),
            (_base_classifier(base), self.path[:-len(".safetensors")] + ".h5",
             r"\*\.lora\.safetensors"),
        ]
        for model, path, message in cases:
            values = _values(model)
            error = CheckpointError if "truncated" in message else ValueError
            with self.assertRaisesRegex(error, message):
                model.load_lora_weights(path)
            self.assertEqual(lora_layers(model.backbone), [])
            for now, was in zip(_values(model), values):
                np.testing.assert_array_equal(now, was)

    def test_lora_on_with_other_settings_is_refused(self):
        trained, base = _trained_classifier()
        trained.save_lora_weights(self.path)
        model = _base_classifier(base)
        model.backbone.enable_lora(4, target_names=ROLES, lora_alpha=8)
        values = _values(model)
        with self.assertRaisesRegex(ValueError, "already has rank 4"):
            model.load_lora_weights(self.path)
        for now, was in zip(_values(model), values):
            np.testing.assert_array_equal(now, was)
        # Enabled the same way, the load fills the adapters in.
        same = _base_classifier(base)
        same.backbone.enable_lora(2, target_names=ROLES, lora_alpha=8)
        same.load_lora_weights(self.path)
        inputs = packed_inputs(batch=4)
        self.assertAllClose(same.predict(inputs, verbose=0),
                            trained.predict(inputs, verbose=0), atol=1e-6)

    def test_saving_needs_adapters_and_a_safetensors_name(self):
        model = BertClassifier(BertBackbone(**TINY), num_classes=2,
                               preprocessor=None)
        with self.assertRaisesRegex(ValueError, "no LoRA adapters"):
            model.save_lora_weights(self.path)
        model.backbone.enable_lora(2)
        with self.assertRaisesRegex(ValueError, r"\.lora\.safetensors"):
            model.save_lora_weights(os.path.join(self.get_temp_dir(),
                                                 "task.lora.h5"))
        self.assertFalse(os.path.exists(self.path))

    def test_a_failed_save_leaves_the_previous_file(self):
        trained, _ = _trained_classifier()
        trained.save_lora_weights(self.path)
        with open(self.path, "rb") as f:
            previous = f.read()

        def dies_half_way(filename, tensors, metadata):
            with open(filename, "wb") as f:
                f.write(b"half a file")
            raise OSError("disk full")

        move_lora_adapters(trained, seed=2)
        with mock.patch.object(lora_weights, "write_safetensors",
                               dies_half_way):
            with self.assertRaisesRegex(OSError, "disk full"):
                trained.save_lora_weights(self.path)
        with open(self.path, "rb") as f:
            self.assertEqual(f.read(), previous)
        self.assertEqual(os.listdir(os.path.dirname(self.path)),
                         [os.path.basename(self.path)])

    def test_predict_traced_before_enable_lora_is_traced_again(self):
        model = BertClassifier(BertBackbone(**TINY), num_classes=3,
                               preprocessor=None)
        inputs = packed_inputs(batch=4)
        before = to_numpy(model.predict(inputs, verbose=0))
        model.backbone.enable_lora(2)
        move_lora_adapters(model)
        after = to_numpy(model.predict(inputs, verbose=0))
        self.assertAllClose(after, to_numpy(model(inputs)), atol=1e-5)
        self.assertGreater(np.abs(after - before).max(), 1e-5)
