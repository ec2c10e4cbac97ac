"""Tasks meet keras-hub habits: presets carry a preprocessor, tasks come
compiled, and a `.keras` file or preset loads without compile warnings."""

import os
import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from tests.checkpoints import reference_checkpoints as ref
from tests.test_case import TestCase
from tests.test_case import to_numpy

TEXTS = ["the cat sat on the mat .", "a dog was happy !",
         "it was tired .", "hello world , the dog reads"] * 4
LABELS = np.array([0, 1, 0, 1] * 4)
TASKS = {
    keras_bert.BertClassifier: ("BertPreprocessor", {"num_classes": 3}),
    keras_bert.BertTokenClassifier: ("BertTokenClassifierPreprocessor",
                                     {"num_classes": 3}),
    keras_bert.BertMultipleChoice: ("BertMultipleChoicePreprocessor",
                                    {"num_choices": 2}),
    keras_bert.BertQuestionAnswerer: ("BertQuestionAnswererPreprocessor", {}),
    keras_bert.BertPretrainer: ("BertMaskedLMPreprocessor", {}),
}


def schedule_length(model):
    return model.optimizer._learning_rate.total_steps


class TaskPresetTest(TestCase):
    def setUp(self):
        super().setUp()
        self.hf_dir = os.path.join(self.get_temp_dir(), "hf")
        ref.make_huggingface("BertForPreTraining", self.hf_dir)

    def test_every_task_attaches_its_preprocessor(self):
        for task, (preprocessor, kwargs) in TASKS.items():
            with self.subTest(task=task.__name__):
                model = task.from_preset(self.hf_dir, sequence_length=20,
                                         **kwargs)
                self.assertEqual(type(model.preprocessor).__name__,
                                 preprocessor)
                self.assertEqual(model.preprocessor.sequence_length, 20)
                self.assertTrue(model.compiled)
        # Without sequence_length: the checkpoint's 24 positions cap it.
        model = keras_bert.BertClassifier.from_preset(self.hf_dir,
                                                      num_classes=2)
        self.assertEqual(model.preprocessor.sequence_length, 24)
        pretrainer = keras_bert.BertPretrainer.from_preset(
            self.hf_dir, next_sentence_prediction=False)
        self.assertFalse(pretrainer.preprocessor.next_sentence_prediction)

    def test_google_and_keras_hub_directories_attach_it_too(self):
        import keras_hub
        import transformers

        from tests.checkpoints.test_google_checkpoint import google_config

        google = os.path.join(self.get_temp_dir(), "google")
        os.makedirs(google)
        reference = transformers.BertForPreTraining(
            transformers.BertConfig(**ref.TINY_CONFIG))
        ref.write_google_checkpoint(
            ref.google_variables(reference.state_dict(),
                                 ref.TINY_CONFIG["num_hidden_layers"]),
            google, google_config())
        hub = os.path.join(self.get_temp_dir(), "hub")
        keras_hub.models.BertBackbone(
            vocabulary_size=len(ref.VOCABULARY), num_layers=1, num_heads=2,
            hidden_dim=16, intermediate_dim=32, max_sequence_length=24,
        ).save_to_preset(hub)
        keras_hub.models.BertTokenizer(ref.VOCABULARY).save_to_preset(hub)
        for directory in (google, hub):
            with self.subTest(directory=os.path.basename(directory)):
                model = keras_bert.BertClassifier.from_preset(
                    directory, num_classes=2, sequence_length=12)
                self.assertEqual(model.preprocessor.tokenizer.get_vocabulary(),
                                 ref.VOCABULARY)
                self.assertEqual(to_numpy(model.predict(
                    ["the cat sat"], verbose=0)).shape, (1, 2))

    @pytest.mark.slow
    def test_classifier_predicts_and_fits_raw_strings_without_compile(self):
        model = keras_bert.BertClassifier.from_preset(
            self.hf_dir, num_classes=4, sequence_length=16)
        self.assertEqual(to_numpy(model.predict(["some text"], verbose=0))
                         .shape, (1, 4))
        before = to_numpy(model.classifier_head.kernel)
        dataset = tf.data.Dataset.from_tensor_slices((TEXTS, LABELS))
        history = model.fit(dataset.batch(4), epochs=2, verbose=0)
        self.assertEqual(len(history.history["loss"]), 2)
        self.assertFalse(np.allclose(to_numpy(model.classifier_head.kernel),
                                     before))
        # The default recipe was sized by `fit`: 2 epochs x 4 batches.
        self.assertEqual(schedule_length(model), 8)
        self.assertEqual(int(model.optimizer.iterations), 8)

    @pytest.mark.slow
    def test_schedule_is_sized_once_and_compile_overrides_it(self):
        model = keras_bert.BertClassifier.from_preset(
            self.hf_dir, num_classes=2, sequence_length=16)
        model.fit(TEXTS, LABELS, batch_size=8, epochs=3, verbose=0)
        self.assertEqual(schedule_length(model), 6)
        # A second fit, of another length (2 steps), continues the same
        # schedule.
        model.fit(TEXTS, LABELS, batch_size=8, epochs=1, verbose=0)
        self.assertEqual(schedule_length(model), 6)
        model.compile(num_train_steps=50, learning_rate=1e-3)
        self.assertEqual(schedule_length(model), 50)
        model.compile(optimizer=keras.optimizers.SGD(0.1))
        model.fit(TEXTS, LABELS, batch_size=8, verbose=0)
        self.assertIsInstance(model.optimizer, keras.optimizers.SGD)

    def test_preprocessor_none_and_a_directory_without_vocabulary(self):
        model = keras_bert.BertClassifier.from_preset(
            self.hf_dir, num_classes=2, preprocessor=None)
        self.assertIsNone(model.preprocessor)
        os.remove(os.path.join(self.hf_dir, "vocab.txt"))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = keras_bert.BertClassifier.from_preset(self.hf_dir,
                                                          num_classes=2)
        notes = [str(w.message) for w in caught if "vocab" in str(w.message)]
        self.assertEqual(len(notes), 1, notes)
        self.assertIn(self.hf_dir, notes[0])
        self.assertIsNone(model.preprocessor)

    def test_task_preset_keeps_or_resizes_its_stored_preprocessor(self):
        model = keras_bert.BertTokenClassifier.from_preset(
            self.hf_dir, num_classes=3, sequence_length=12)
        directory = os.path.join(self.get_temp_dir(), "task")
        model.save_to_preset(directory)
        restored = keras_bert.BertTokenClassifier.from_preset(directory)
        self.assertEqual(restored.preprocessor.sequence_length, 12)
        longer = keras_bert.BertTokenClassifier.from_preset(
            directory, sequence_length=20)
        self.assertEqual(longer.preprocessor.sequence_length, 20)
        words = [["the", "cat", "sat"]]
        self.assertEqual(to_numpy(longer.predict(words, verbose=0)).shape,
                         (1, 20, 3))

    def test_loading_prints_no_compile_warning(self):
        for task, (_, kwargs) in TASKS.items():
            with self.subTest(task=task.__name__):
                model = task.from_preset(self.hf_dir, sequence_length=16,
                                         **kwargs)
                path = os.path.join(self.get_temp_dir(), "model.keras")
                model.save(path)
                preset = os.path.join(self.get_temp_dir(), task.__name__)
                model.save_to_preset(preset)
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    restored = keras.saving.load_model(path)
                    task.from_preset(preset)
                messages = [str(w.message) for w in caught]
                self.assertFalse([m for m in messages if "compile" in m],
                                 messages)
                self.assertTrue(restored.compiled)

    def test_pretrainer_fits_raw_text_in_three_lines(self):
        pretrainer = keras_bert.BertPretrainer.from_preset(
            self.hf_dir, next_sentence_prediction=False, sequence_length=16)
        texts = tf.data.Dataset.from_tensor_slices(TEXTS).batch(4)
        history = pretrainer.fit(texts, epochs=2, verbose=0)
        self.assertEqual(len(history.history["loss"]), 2)
        self.assertEqual(schedule_length(pretrainer), 8)

    def test_pretrainer_with_nsp_fits_raw_pairs(self):
        pretrainer = keras_bert.BertPretrainer.from_preset(
            self.hf_dir, sequence_length=20)
        pairs = tf.data.Dataset.from_tensor_slices(
            (TEXTS, TEXTS[1:] + TEXTS[:1])).batch(8)
        history = pretrainer.fit(pairs, verbose=0)
        self.assertIn("nsp_logits_loss", history.history)
        self.assertAllFinite(history.history["loss"])

    def test_pretrainer_refuses_a_mismatched_preprocessor(self):
        pre = keras_bert.BertMaskedLMPreprocessor(
            keras_bert.BertTokenizer(ref.VOCABULARY), sequence_length=16)
        backbone = keras_bert.BertBackbone.from_preset(self.hf_dir)
        with self.assertRaisesRegex(ValueError, "next_sentence_prediction"):
            keras_bert.BertPretrainer(backbone, preprocessor=pre)
