"""ONNX exports run by onnxruntime give the Keras model's outputs.

A tiny backbone and classifier with random weights (biases and LayerNorms
included) and all-MiniLM-L6-v2's real vocabulary are exported once per
class; under JAX and PyTorch that goes through the TensorFlow subprocess
route, so the check is that the route reproduces the model of the running
backend. Inputs are real SST-2 sentences tokenized by `BertTokenizer` and
padded to each batch's longest row, the way a client would send them.
"""

import os
import shutil
import tempfile

import numpy as np
import pytest

from keras_bert import BertBackbone
from keras_bert.export import export_onnx
from keras_bert.models.bert_classifier import BertClassifier
from keras_bert.preprocessing import BertPreprocessor
from keras_bert.preprocessing import BertTokenizer
from tests.checkpoints.reference_checkpoints import MINILM_DIR
from tests.checkpoints.test_presets_and_export import randomized
from tests.export.export_test_utils import sst2_sentences
from tests.test_case import TestCase
from tests.test_case import skip_unless_backend
from tests.test_case import to_numpy

ATOL = 1e-4
LABELS = ["negative", "positive"]
INPUTS = ("token_ids", "segment_ids", "padding_mask")
# Two batches with different sizes and padded lengths, one session.
BATCHES = (slice(0, 6), slice(6, 8))


def packer(sequence_length=64):
    tokenizer = BertTokenizer(os.path.join(MINILM_DIR, "vocab.txt"))
    return BertPreprocessor(tokenizer, sequence_length, dynamic_padding=True)


def packed(preprocessor, sentences):
    return {name: np.asarray(to_numpy(value), "int32")
            for name, value in preprocessor(list(sentences)).items()}


def session(path):
    import onnxruntime

    return onnxruntime.InferenceSession(
        path, providers=["CPUExecutionProvider"])


def run(onnx_session, inputs):
    names = [output.name for output in onnx_session.get_outputs()]
    return dict(zip(names, onnx_session.run(names, inputs)))


class OnnxExportTest(TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.directory = tempfile.mkdtemp()
        cls.preprocessor = packer()
        sentences = sst2_sentences()
        cls.batches = [packed(cls.preprocessor, sentences[part])
                       for part in BATCHES]
        cls.backbone = BertBackbone(
            vocabulary_size=cls.preprocessor.tokenizer.vocabulary_size(),
            num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32,
            max_sequence_length=64, dropout=0.0)
        # Randomizes the shared backbone too.
        cls.classifier = randomized(BertClassifier(
            cls.backbone, num_classes=2, dropout=0.0), seed=4)
        cls.sessions = {}
        for name, model, labels in (("backbone", cls.backbone, None),
                                    ("classifier", cls.classifier, LABELS)):
            path = os.path.join(cls.directory, name + ".onnx")
            export_onnx(model, path, label_names=labels, verbose=False)
            cls.sessions[name] = session(path)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.directory, ignore_errors=True)
        super().tearDownClass()

    def test_batches_are_padded_real_text_of_two_shapes(self):
        first, second = (batch["token_ids"].shape for batch in self.batches)
        self.assertNotEqual(first[0], second[0])
        self.assertNotEqual(first[1], second[1])
        for batch in self.batches:
            self.assertEqual(batch["padding_mask"].min(), 0)  # padded rows
            # Mostly whole words of the real vocabulary, not [UNK].
            unknown = self.preprocessor.tokenizer.unk_token_id
            self.assertLess(np.mean(batch["token_ids"] == unknown), 0.05)

    def test_inputs_are_int32_with_symbolic_batch_and_sequence(self):
        for name, onnx_session in self.sessions.items():
            inputs = onnx_session.get_inputs()
            self.assertEqual([i.name for i in inputs], list(INPUTS), name)
            for value in inputs:
                self.assertEqual(value.type, "tensor(int32)")
                self.assertEqual(value.shape, ["batch", "sequence"])
        outputs = {o.name: o.shape
                   for o in self.sessions["backbone"].get_outputs()}
        self.assertEqual(outputs, {
            "sequence_output": ["batch", "sequence", 16],
            "pooled_output": ["batch", 16]})
        self.assertEqual(
            sorted(o.name for o in self.sessions["classifier"].get_outputs()),
            ["label_ids", "labels", "logits", "probabilities"])

    def test_backbone_matches_the_keras_model(self):
        for batch in self.batches:
            actual = run(self.sessions["backbone"], batch)
            expected = to_numpy(self.backbone(batch))
            for name in ("sequence_output", "pooled_output"):
                self.assertAllClose(actual[name], expected[name], atol=ATOL,
                                    rtol=0, msg=name)

    def test_classifier_matches_the_keras_model(self):
        for batch in self.batches:
            actual = run(self.sessions["classifier"], batch)
            logits = to_numpy(self.classifier(batch))
            self.assertAllClose(actual["logits"], logits, atol=ATOL, rtol=0)
            shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
            self.assertAllClose(actual["probabilities"],
                                shifted / shifted.sum(axis=-1, keepdims=True),
                                atol=ATOL, rtol=0)
            np.testing.assert_array_equal(actual["label_ids"],
                                          logits.argmax(axis=-1))
            self.assertEqual([str(label) for label in actual["labels"]],
                             [LABELS[i] for i in actual["label_ids"]])

    def test_padded_rows_equal_unpadded_requests(self):
        batch = self.batches[0]
        lengths = batch["padding_mask"].sum(axis=1)
        row = int(lengths.argmin())
        alone = {name: batch[name][row:row + 1, :lengths[row]]
                 for name in INPUTS}
        for name, output in (("backbone", "pooled_output"),
                             ("classifier", "logits")):
            self.assertAllClose(run(self.sessions[name], alone)[output][0],
                                run(self.sessions[name], batch)[output][row],
                                atol=1e-5, rtol=0, msg=name)


class MiniLMOnnxExportTest(TestCase):
    """The real all-MiniLM-L6-v2 weights, exported and run by onnxruntime.

    TensorFlow only: every backend's export is converted by the same
    TensorFlow code, which the tiny models above already check under
    JAX and PyTorch; real weights add realistic activation sizes, and
    converting 22M parameters takes tf2onnx about a minute.
    """

    @pytest.mark.large
    @pytest.mark.slow
    @skip_unless_backend("tensorflow")
    def test_backbone_matches_the_keras_model(self):
        backbone = BertBackbone.from_preset(MINILM_DIR)
        path = os.path.join(self.get_temp_dir(), "minilm.onnx")
        export_onnx(backbone, path, verbose=False)
        onnx_session = session(path)
        preprocessor = packer(sequence_length=128)
        sentences = sst2_sentences()
        for part in BATCHES:
            batch = packed(preprocessor, sentences[part])
            actual = run(onnx_session, batch)
            expected = to_numpy(backbone(batch))
            for name in ("sequence_output", "pooled_output"):
                self.assertAllClose(actual[name], expected[name], atol=ATOL,
                                    rtol=0, msg=name)
