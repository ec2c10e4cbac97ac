"""keras_bert presets round-trip; exports load in `transformers` unchanged."""

import json
import os
import subprocess
import sys
import warnings

import h5py
import keras
import numpy as np
import pytest

import keras_bert
from keras_bert.checkpoints import CheckpointError
from keras_bert.checkpoints import export_to_huggingface
from keras_bert.checkpoints import save_to_preset
from keras_bert.models.bert_classifier import BertClassifier
from keras_bert.models.bert_multiple_choice import BertMultipleChoice
from keras_bert.models.bert_question_answerer import BertQuestionAnswerer
from keras_bert.models.bert_token_classifier import BertTokenClassifier
from keras_bert.preprocessing import BertPreprocessor
from keras_bert.preprocessing import BertTokenizer
from tests.checkpoints import reference_checkpoints as ref
from tests.test_case import TestCase
from tests.test_case import to_numpy

ATOL = 1e-5
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))


def tiny_backbone(**kwargs):
    config = {
        "vocabulary_size": len(ref.VOCABULARY), "num_layers": 2,
        "num_heads": 2, "hidden_dim": 16, "intermediate_dim": 32,
        "max_sequence_length": 24,
    }
    return keras_bert.BertBackbone(**{**config, **kwargs})


def randomized(model, seed=0):
    """Random values for every weight (biases and LayerNorms included)."""
    rng = np.random.default_rng(seed)
    for weight in model.weights:
        weight.assign(rng.normal(0, 0.3, weight.shape).astype("float32"))
    return model


def backbone_inputs():
    inputs = ref.tiny_inputs()
    return {k: inputs[k] for k in ("token_ids", "segment_ids", "padding_mask")}


class PresetRoundTripTest(TestCase):
    def test_backbone_round_trip(self):
        backbone = randomized(tiny_backbone(activation="gelu_approximate"))
        directory = os.path.join(self.get_temp_dir(), "preset")
        backbone.save_to_preset(directory)
        self.assertEqual(sorted(os.listdir(directory)),
                         ["config.json", "metadata.json", "model.weights.h5"])
        with open(os.path.join(directory, "metadata.json")) as f:
            metadata = json.load(f)
        self.assertEqual(metadata["parameter_count"], backbone.count_params())
        self.assertEqual(metadata["keras_bert_version"],
                         keras_bert.__version__)
        restored = keras_bert.BertBackbone.from_preset(directory)
        self.assertEqual(restored.activation, "gelu_approximate")
        self.assertAllClose(restored(backbone_inputs()),
                            backbone(backbone_inputs()), atol=0, rtol=0)

    def test_pretrainer_round_trip_with_tokenizer(self):
        model = randomized(keras_bert.BertPretrainer(tiny_backbone()))
        tokenizer = BertTokenizer(ref.VOCABULARY, lowercase=True)
        directory = os.path.join(self.get_temp_dir(), "preset")
        save_to_preset(model, directory, tokenizer=tokenizer)
        self.assertTrue(os.path.isfile(os.path.join(directory, "vocab.txt")))
        restored = keras_bert.BertPretrainer.from_preset(directory)
        inputs = ref.tiny_inputs()
        self.assertAllClose(restored(inputs), model(inputs), atol=0, rtol=0)
        # The backbone alone loads from a task preset too.
        backbone = keras_bert.BertBackbone.from_preset(directory)
        self.assertAllClose(backbone(backbone_inputs()),
                            model.backbone(backbone_inputs()), atol=0, rtol=0)
        self.assertEqual(
            BertTokenizer.from_preset(directory).get_vocabulary(),
            ref.VOCABULARY)

    def test_classifier_with_preprocessor_round_trip(self):
        tokenizer = BertTokenizer(ref.VOCABULARY)
        model = randomized(BertClassifier(
            tiny_backbone(), num_classes=3,
            preprocessor=BertPreprocessor(tokenizer, sequence_length=12)))
        directory = os.path.join(self.get_temp_dir(), "preset")
        model.save_to_preset(directory)
        self.assertTrue(os.path.isfile(os.path.join(directory, "vocab.txt")))
        restored = BertClassifier.from_preset(directory)
        self.assertIsNotNone(restored.preprocessor)
        self.assertAllClose(restored(backbone_inputs()),
                            model(backbone_inputs()), atol=0, rtol=0)

    def test_the_preset_config_names_its_vocabulary_file(self):
        # config.json names vocab.txt instead of listing every token, the
        # preset still loads after it moves, and a preset written with the
        # list inline (before this) loads as well.
        import shutil

        tokenizer = BertTokenizer(ref.VOCABULARY, lowercase=True)
        model = BertClassifier(
            tiny_backbone(), num_classes=2,
            preprocessor=BertPreprocessor(tokenizer, sequence_length=12))
        directory = os.path.join(self.get_temp_dir(), "preset")
        model.save_to_preset(directory)
        with open(os.path.join(directory, "config.json")) as f:
            text = f.read()
        self.assertEqual(json.loads(text)["config"]["preprocessor"]["config"]
                         ["tokenizer"]["config"]["vocabulary"], "vocab.txt")
        self.assertNotIn(json.dumps(ref.VOCABULARY[-1]), text)
        moved = os.path.join(self.get_temp_dir(), "moved")
        shutil.move(directory, moved)
        texts = ["the quick brown fox", "unseen wordz"]
        expected = model.preprocessor(texts)["token_ids"]
        restored = BertClassifier.from_preset(moved)
        self.assertEqual(restored.preprocessor.tokenizer.get_vocabulary(),
                         ref.VOCABULARY)
        self.assertAllClose(restored.preprocessor(texts)["token_ids"],
                            expected, atol=0, rtol=0)
        inline = json.loads(text)
        inline["config"]["preprocessor"]["config"]["tokenizer"]["config"][
            "vocabulary"] = ref.VOCABULARY
        with open(os.path.join(moved, "config.json"), "w") as f:
            json.dump(inline, f)
        os.remove(os.path.join(moved, "vocab.txt"))
        old = BertClassifier.from_preset(moved, load_weights=False)
        self.assertEqual(old.preprocessor.tokenizer.get_vocabulary(),
                         ref.VOCABULARY)

    def test_trained_model_preset_has_no_optimizer_state(self):
        tokenizer = BertTokenizer(ref.VOCABULARY)
        model = BertClassifier(
            tiny_backbone(), num_classes=2,
            preprocessor=BertPreprocessor(tokenizer, sequence_length=12))
        model.compile(num_train_steps=2)
        model.fit(["the cat", "a dog"] * 2, np.array([0, 1] * 2),
                  batch_size=2, verbose=0)
        directory = os.path.join(self.get_temp_dir(), "preset")
        model.save_to_preset(directory)
        with h5py.File(os.path.join(directory, "model.weights.h5")) as f:
            saved = []
            f.visititems(lambda name, item: saved.append(name)
                         if isinstance(item, h5py.Dataset) else None)
        self.assertEqual(len(saved), len(model.weights))
        self.assertFalse([name for name in saved if "optimizer" in name])
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # e.g. "Skipping variable loading"
            restored = BertClassifier.from_preset(directory)
        self.assertAllClose(restored(backbone_inputs()),
                            model(backbone_inputs()), atol=0, rtol=0)

    def test_task_from_another_models_preset(self):
        pretrainer = randomized(keras_bert.BertPretrainer(tiny_backbone()))
        directory = os.path.join(self.get_temp_dir(), "preset")
        pretrainer.save_to_preset(directory)
        with self.assertLogs("keras_bert.checkpoints", "INFO") as logs:
            classifier = BertClassifier.from_preset(directory, num_classes=2)
        self.assertIn("BertPretrainer", "\n".join(logs.output))
        self.assertAllClose(classifier.backbone(backbone_inputs()),
                            pretrainer.backbone(backbone_inputs()),
                            atol=0, rtol=0)

    @pytest.mark.slow
    def test_preset_loads_under_another_backend(self):
        backbone = randomized(tiny_backbone())
        scratch = self.get_temp_dir()
        directory = os.path.join(scratch, "preset")
        backbone.save_to_preset(directory)
        ids = backbone_inputs()["token_ids"]
        np.save(os.path.join(scratch, "ids.npy"), ids)
        backends = ["tensorflow", "jax", "torch"]
        other = backends[(backends.index(keras.config.backend()) + 1) % 3]
        script = (
            "import sys, keras, numpy as np, keras_bert\n"
            "ids = np.load(sys.argv[2])\n"
            "model = keras_bert.BertBackbone.from_preset(sys.argv[1])\n"
            "out = model({'token_ids': ids, 'segment_ids': 0 * ids,"
            " 'padding_mask': np.ones_like(ids)})\n"
            "np.save(sys.argv[3],"
            " keras.ops.convert_to_numpy(out['sequence_output']))\n"
        )
        output = os.path.join(scratch, "out.npy")
        result = subprocess.run(
            [sys.executable, "-c", script, directory,
             os.path.join(scratch, "ids.npy"), output],
            cwd=ROOT, env={**os.environ, "KERAS_BACKEND": other},
            capture_output=True, text=True,
        )
        self.assertEqual(result.returncode, 0, result.stderr[-2000:])
        expected = backbone({"token_ids": ids, "segment_ids": 0 * ids,
                             "padding_mask": np.ones_like(ids)})
        self.assertAllClose(np.load(output), expected["sequence_output"],
                            atol=ATOL, rtol=0)

    def test_failed_save_leaves_previous_preset(self):
        directory = os.path.join(self.get_temp_dir(), "preset")
        first = randomized(tiny_backbone(), seed=1)
        first.save_to_preset(directory)

        class BrokenTokenizer:
            def get_vocabulary(self):
                return list(ref.VOCABULARY)

            def save_to_preset(self, path):
                raise RuntimeError("disk full")

        with self.assertRaisesRegex(RuntimeError, "disk full"):
            save_to_preset(randomized(tiny_backbone(), seed=2), directory,
                           tokenizer=BrokenTokenizer())
        restored = keras_bert.BertBackbone.from_preset(directory)
        self.assertAllClose(restored(backbone_inputs()),
                            first(backbone_inputs()), atol=0, rtol=0)
        parent = os.path.dirname(directory)
        self.assertEqual(os.listdir(parent), ["preset"])  # no temp left

    def test_refuses_to_replace_unrelated_directory(self):
        directory = self.get_temp_dir()
        with open(os.path.join(directory, "notes.txt"), "w") as f:
            f.write("mine")
        with self.assertRaisesRegex(CheckpointError, "notes.txt"):
            tiny_backbone().save_to_preset(directory)
        self.assertEqual(os.listdir(directory), ["notes.txt"])


class HuggingFaceExportTest(TestCase):
    def load_reference(self, hf_class, directory):
        import transformers

        model, info = getattr(transformers, hf_class).from_pretrained(
            directory, output_loading_info=True)
        for kind in ("missing_keys", "unexpected_keys", "mismatched_keys"):
            self.assertEqual(list(info[kind]), [], kind)
        return model.eval()

    def test_backbone_export(self):
        import transformers

        backbone = randomized(tiny_backbone())
        directory = os.path.join(self.get_temp_dir(), "hf")
        tokenizer = BertTokenizer(ref.VOCABULARY)
        export_to_huggingface(backbone, directory, tokenizer=tokenizer)
        reference = self.load_reference("BertModel", directory)
        expected = ref.huggingface_outputs(reference, backbone_inputs())
        actual = to_numpy(backbone(backbone_inputs()))
        self.assertAllClose(actual["sequence_output"],
                            expected["last_hidden_state"], atol=ATOL, rtol=0)
        self.assertAllClose(actual["pooled_output"],
                            expected["pooler_output"], atol=ATOL, rtol=0)
        hf_tokenizer = transformers.BertTokenizerFast.from_pretrained(
            directory)
        text = "The cat sat on the mat!"
        self.assertEqual(to_numpy(tokenizer(text)).tolist(),
                         hf_tokenizer(text, add_special_tokens=False)[
                             "input_ids"])

    def test_pretrainer_export(self):
        model = randomized(keras_bert.BertPretrainer(tiny_backbone()))
        directory = os.path.join(self.get_temp_dir(), "hf")
        export_to_huggingface(model, directory)
        reference = self.load_reference("BertForPreTraining", directory)
        inputs = ref.tiny_inputs()
        expected = ref.huggingface_outputs(reference, inputs)
        actual = to_numpy(model(inputs))
        self.assertAllClose(
            actual["mlm_logits"],
            ref.masked_logits(expected["prediction_logits"],
                              inputs["mask_positions"]),
            atol=ATOL, rtol=0)
        self.assertAllClose(actual["nsp_logits"],
                            expected["seq_relationship_logits"],
                            atol=ATOL, rtol=0)

    def check_task_export(self, model, hf_class, inputs=None):
        model = randomized(model)
        directory = os.path.join(self.get_temp_dir(), "hf")
        export_to_huggingface(model, directory)
        reference = self.load_reference(hf_class, directory)
        inputs = backbone_inputs() if inputs is None else inputs
        expected = ref.huggingface_outputs(reference, inputs)
        if hf_class == "BertForQuestionAnswering":
            expected = np.stack([expected["start_logits"],
                                 expected["end_logits"]], axis=-1)
        else:
            expected = expected["logits"]
        self.assertAllClose(model(inputs), expected, atol=ATOL, rtol=0)

    def test_task_exports(self):
        self.check_task_export(
            BertClassifier(tiny_backbone(), num_classes=4),
            "BertForSequenceClassification")
        self.check_task_export(
            BertTokenClassifier(tiny_backbone(), num_classes=3),
            "BertForTokenClassification")
        self.check_task_export(BertQuestionAnswerer(tiny_backbone()),
                               "BertForQuestionAnswering")
        self.check_task_export(
            BertMultipleChoice(tiny_backbone(), num_choices=2),
            "BertForMultipleChoice",
            inputs={k: v[None] for k, v in backbone_inputs().items()})

    def test_export_of_huggingface_import_is_lossless(self):
        source = self.get_temp_dir()
        ref.make_huggingface("BertForPreTraining", source)
        model = keras_bert.BertPretrainer.from_preset(source)
        directory = os.path.join(self.get_temp_dir(), "hf")
        export_to_huggingface(model, directory)
        from safetensors.numpy import load_file

        original = load_file(os.path.join(source, "model.safetensors"))
        exported = load_file(os.path.join(directory, "model.safetensors"))
        self.assertEqual(sorted(exported), sorted(original))
        for key in original:
            np.testing.assert_array_equal(exported[key], original[key], key)

    def test_pre_norm_backbone_is_not_exportable(self):
        with self.assertRaisesRegex(CheckpointError, "normalize_first"):
            export_to_huggingface(tiny_backbone(normalize_first=True),
                                  os.path.join(self.get_temp_dir(), "hf"))
