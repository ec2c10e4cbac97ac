import os

import numpy as np

from keras_bert.checkpoints import save_to_preset
from keras_bert.models.bert_backbone import BertBackbone
from keras_bert.models.bert_pretrainer import BertPretrainer
from tests.commands.cli_helpers import cli_error
from tests.commands.cli_helpers import run_cli
from tests.commands.cli_helpers import write_toy_pretrainer_preset
from tests.test_case import TestCase


class ExportCommandTest(TestCase):
    def setUp(self):
        super().setUp()
        self.root = self.get_temp_dir()
        self.preset, _, self.tokenizer = write_toy_pretrainer_preset(
            self.root)

    def test_pretrainer_preset_to_a_string_savedmodel(self):
        import tensorflow as tf
        import tensorflow_text  # noqa: F401  (registers the tokenizer ops)

        target = os.path.join(self.root, "exported", "1")
        code, printed = run_cli("export", self.preset, target,
                                "--format", "savedmodel")
        self.assertEqual(code, 0)
        self.assertIn("exporting its backbone", printed)
        serve = tf.saved_model.load(target).signatures["serving_default"]
        outputs = serve(text=tf.constant(["w1 w2 w3 .", "w4 ."]))
        self.assertEqual(tuple(outputs["pooled_output"].shape), (2, 16))
        self.assertTrue(np.all(np.isfinite(outputs["pooled_output"].numpy())))

        self.assertRegex(cli_error("export", self.preset, target, "--format",
                                   "savedmodel"), "already exists.*--overwrite")

    def test_finetuned_model_exports_its_saved_label_names(self):
        import tensorflow as tf
        import tensorflow_text  # noqa: F401  (registers the tokenizer ops)

        from keras_bert import BertClassifier
        from keras_bert import BertPreprocessor
        from keras_bert.commands.predict import save_task_info

        pretrainer = BertPretrainer.from_preset(self.preset,
                                                preprocessor=None)
        classifier = BertClassifier(
            pretrainer.backbone, num_classes=2,
            preprocessor=BertPreprocessor(self.tokenizer, sequence_length=16))
        best = os.path.join(self.root, "best")
        save_to_preset(classifier, best)
        # What `keras-bert finetune` writes beside its best model.
        save_task_info(best, {"task": "classify", "labels": ["neg", "pos"],
                              "columns": {"text": "sentence"}})
        target = os.path.join(self.root, "classifier", "1")
        code, _ = run_cli("export", best, target, "--format", "savedmodel")
        self.assertEqual(code, 0)
        serve = tf.saved_model.load(target).signatures["serving_default"]
        outputs = serve(text=tf.constant(["w1 w2 .", "w3 ."]))
        labels = [label.decode() for label in outputs["labels"].numpy()]
        expected = ["neg", "pos"]
        self.assertEqual(labels, [expected[i] for i in
                                  outputs["label_ids"].numpy()])

    def test_without_vocabulary_only_packed_inputs(self):
        bare = os.path.join(self.root, "bare")
        save_to_preset(BertPretrainer(BertBackbone(
            vocabulary_size=31, num_layers=1, num_heads=2, hidden_dim=16,
            intermediate_dim=32, max_sequence_length=32)), bare)
        target = os.path.join(self.root, "packed")
        self.assertRegex(cli_error("export", bare, target, "--format",
                                   "savedmodel"),
                         "has no vocab.txt.*--packed-only")
        self.assertFalse(os.path.exists(target))

    def test_missing_model_directory(self):
        self.assertIn("no such directory", cli_error(
            "export", os.path.join(self.root, "nope"),
            os.path.join(self.root, "out.onnx"), "--format", "onnx"))
