"""SavedModels of a `BertTextEmbedder` (every backend) and a
`BertCrossEncoder` (TensorFlow): strings in, vectors / scores out, served
by a process with TensorFlow and tensorflow-text only."""

import os
import shutil
import tempfile

import numpy as np
import pytest

import keras_bert
from keras_bert.preprocessing.tasks import BertCrossEncoderPreprocessor
from keras_bert.preprocessing.tasks import BertTextEmbedderPreprocessor
from tests.export import export_test_utils as utils
from tests.test_case import TestCase
from tests.test_case import backend


# Its setUpClass builds, exports and serves: 20-60 s.
@pytest.mark.slow
class TextEmbedderExportTest(TestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.directory = tempfile.mkdtemp()
        tokenizer = utils.tokenizer()
        cls.sentences = list(utils.sst2_sentences()) + [""]
        cls.embedder = keras_bert.BertTextEmbedder(
            utils.tiny_backbone(), preprocessor=BertTextEmbedderPreprocessor(
                tokenizer, sequence_length=utils.SEQUENCE_LENGTH))
        cls.paths = {"embedder": os.path.join(cls.directory, "embedder")}
        keras_bert.export_saved_model(cls.embedder, cls.paths["embedder"],
                                      verbose=False)
        jobs = {"vectors": ("embedder", {"text": utils.strings(
            cls.sentences)})}
        if backend() == "tensorflow":
            questions, contexts = utils.squad_examples()
            cls.pairs = (list(questions), list(contexts))
            cls.reranker = keras_bert.BertCrossEncoder(
                utils.tiny_backbone(), dropout=0.0,
                preprocessor=BertCrossEncoderPreprocessor(
                    tokenizer, sequence_length=utils.SEQUENCE_LENGTH))
            cls.paths["reranker"] = os.path.join(cls.directory, "reranker")
            keras_bert.export_saved_model(cls.reranker, cls.paths["reranker"],
                                          verbose=False)
            jobs["scores"] = ("reranker", {
                "query": utils.strings(cls.pairs[0]),
                "passage": utils.strings(cls.pairs[1])})
        cls.results = utils.serve({
            name: (cls.paths[model], "serving_default", inputs)
            for name, (model, inputs) in jobs.items()})

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.directory, ignore_errors=True)
        super().tearDownClass()

    def test_served_vectors_equal_encode(self):
        self.assertEqual(self.results["__modules__"]["keras_bert"], [])
        served = self.results["vectors"]["embeddings"]
        self.assertEqual(served.dtype, np.float32)
        self.assertAllClose(served, self.embedder.encode(self.sentences),
                            atol=1e-5, rtol=0)

    def test_served_scores_equal_score(self):
        if backend() != "tensorflow":
            self.skipTest("the cross-encoder export is checked under "
                          "TensorFlow")
        self.assertAllClose(self.results["scores"]["scores"],
                            self.reranker.score(*self.pairs),
                            atol=1e-5, rtol=0)
