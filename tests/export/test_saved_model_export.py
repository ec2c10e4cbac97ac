"""SavedModels served by a fresh process that has only TensorFlow.

Every model is exported once (class setup) and all requests go to one
serving process (`export_test_utils.serve`), which cannot import
keras_bert. Outputs are compared with the Keras model run in this process
on the same text. Under JAX and PyTorch the export goes through the
TensorFlow subprocess route, so the pair classifier there checks that the
route reproduces the model trained under that backend; the other model
kinds are exported under TensorFlow only, to keep the suite fast.
"""

import os
import shutil
import tempfile

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.export import export_saved_model
from keras_bert.models.bert_classifier import BertClassifier
from keras_bert.models.bert_multiple_choice import BertMultipleChoice
from keras_bert.models.bert_question_answerer import BertQuestionAnswerer
from keras_bert.models.bert_token_classifier import BertTokenClassifier
from keras_bert.preprocessing import BertPreprocessor
from keras_bert.preprocessing.tasks import BertMultipleChoicePreprocessor
from keras_bert.preprocessing.tasks import BertQuestionAnswererPreprocessor
from keras_bert.preprocessing.tasks import BertTokenClassifierPreprocessor
from keras_bert.preprocessing.tasks import best_answer_spans
from tests.export import export_test_utils as utils
from tests.test_case import TestCase
from tests.test_case import backend
from tests.test_case import skip_unless_backend
from tests.test_case import to_numpy

LENGTH = utils.SEQUENCE_LENGTH
LABELS = ["not_equivalent", "equivalent", "unsure"]
# Empty, blank, invalid UTF-8 (stray bytes; a cut multi-byte character),
# far longer than the sequence length, and a normal sentence.
BAD_TEXTS = ["", " \t ", b"\xff\xfe\x80", b"caf\xc3", "word " * 300,
             "a normal sentence ."]


# Its setUpClass builds, exports and serves: 20-60 s.
@pytest.mark.slow
class SavedModelExportTest(TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        keras.utils.set_random_seed(11)
        cls.directory = tempfile.mkdtemp()
        cls.tokenizer = utils.tokenizer()
        cls.pairs = utils.mrpc_pairs()
        cls.sentences = utils.sst2_sentences()
        cls.classifier = BertClassifier(
            utils.tiny_backbone(), num_classes=3, dropout=0.0,
            preprocessor=BertPreprocessor(cls.tokenizer, LENGTH))
        cls.paths = {"classifier": os.path.join(cls.directory, "classifier")}
        export_saved_model(cls.classifier, cls.paths["classifier"],
                           text_inputs=("text_a", "text_b"),
                           label_names=LABELS, verbose=False)
        packed = cls._packed(cls.classifier, cls.pairs)
        jobs = {
            "pairs": ("classifier", {"text_a": utils.strings(cls.pairs[0]),
                                     "text_b": utils.strings(cls.pairs[1])}),
            "pairs_packed": ("classifier", packed, "serving_packed"),
            "first_pair": ("classifier", {
                "text_a": utils.strings(cls.pairs[0][:1]),
                "text_b": utils.strings(cls.pairs[1][:1])}),
            "bad_pairs": ("classifier", {
                "text_a": utils.strings(BAD_TEXTS),
                "text_b": utils.strings(BAD_TEXTS[::-1])}),
        }
        if backend() == "tensorflow":
            jobs.update(cls._export_other_kinds())
        cls.jobs = {
            name: (cls.paths[job[0]], job[2] if len(job) > 2 else
                   "serving_default", job[1])
            for name, job in jobs.items()
        }
        cls.results = utils.serve(cls.jobs)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.directory, ignore_errors=True)
        super().tearDownClass()

    @staticmethod
    def _packed(model, texts):
        packed = model.preprocessor(tuple(list(text) for text in texts))
        return {k: np.asarray(to_numpy(v), "int32") for k, v in packed.items()}

    @classmethod
    def _export(cls, name, model, **kwargs):
        cls.paths[name] = os.path.join(cls.directory, name)
        export_saved_model(model, cls.paths[name], verbose=False, **kwargs)

    @classmethod
    def _export_other_kinds(cls):
        tokenizer = cls.tokenizer
        cls.backbone = utils.tiny_backbone()
        cls._export("backbone", cls.backbone,
                    preprocessor=BertPreprocessor(tokenizer, LENGTH))
        cls.tagger = BertTokenClassifier(
            utils.tiny_backbone(), num_classes=5, dropout=0.0,
            preprocessor=BertTokenClassifierPreprocessor(tokenizer, LENGTH))
        cls._export("tagger", cls.tagger, label_names=list("OPLMX"))
        cls.reader = BertQuestionAnswerer(
            utils.tiny_backbone(),
            preprocessor=BertQuestionAnswererPreprocessor(
                tokenizer, LENGTH, doc_stride=8, max_query_length=10))
        cls._export("reader", cls.reader)
        cls.chooser = BertMultipleChoice(
            utils.tiny_backbone(), num_choices=3, dropout=0.0,
            preprocessor=BertMultipleChoicePreprocessor(tokenizer, LENGTH))
        cls._export("chooser", cls.chooser)
        questions, contexts = utils.squad_examples()
        sentences = cls.sentences
        return {
            "embeddings": ("backbone", {"text": utils.strings(sentences)}),
            "bad_embeddings": ("backbone", {"text": utils.strings(BAD_TEXTS)}),
            "no_texts": ("backbone", {"text": utils.strings([])}),
            "tags": ("tagger", {"text": utils.strings(
                [" ".join(words) for words in utils.conll_sentences()])}),
            "answers": ("reader", {"question": utils.strings(questions),
                                   "context": utils.strings(contexts)}),
            "bad_answers": ("reader", {
                "question": utils.strings(BAD_TEXTS),
                "context": utils.strings(BAD_TEXTS[::-1])}),
            "choices": ("chooser", {
                "prompt": utils.strings(sentences[:4]),
                "choices": utils.strings(sentences[4:16]).reshape(4, 3)}),
        }

    # All backends: the pair classifier --------------------------------

    def test_serving_process_never_imported_keras_bert(self):
        self.assertEqual(self.results["__modules__"]["keras_bert"], [])

    def test_signatures_are_named_with_variable_batch_and_length(self):
        loaded = tf.saved_model.load(self.paths["classifier"])
        self.assertEqual(sorted(loaded.signatures),
                         ["serving_default", "serving_packed"])
        text_inputs = loaded.signatures[
            "serving_default"].structured_input_signature[1]
        self.assertEqual(sorted(text_inputs), ["text_a", "text_b"])
        for spec in text_inputs.values():
            self.assertEqual((spec.dtype, spec.shape.as_list()),
                             (tf.string, [None]))
        packed = loaded.signatures["serving_packed"].structured_input_signature[1]
        self.assertEqual(sorted(packed),
                         ["padding_mask", "segment_ids", "token_ids"])
        for spec in packed.values():
            self.assertEqual((spec.dtype, spec.shape.as_list()),
                             (tf.int32, [None, None]))
        outputs = loaded.signatures["serving_default"].structured_outputs
        self.assertEqual(sorted(outputs),
                         ["label_ids", "labels", "logits", "probabilities"])

    def test_pairs_match_the_keras_model(self):
        served = self.results["pairs"]
        logits = to_numpy(self.classifier(self._packed(self.classifier,
                                                       self.pairs)))
        self.assertAllClose(served["logits"], logits, atol=1e-5, rtol=0)
        self.assertAllClose(served["probabilities"],
                            to_numpy(keras.ops.softmax(logits)),
                            atol=1e-5, rtol=0)
        np.testing.assert_array_equal(served["label_ids"],
                                      np.argmax(logits, axis=-1))
        self.assertEqual([label.decode() for label in served["labels"]],
                         [LABELS[i] for i in served["label_ids"]])

    def test_packed_signature_matches_the_keras_model(self):
        packed = self.jobs["pairs_packed"][2]
        self.assertAllClose(self.results["pairs_packed"]["logits"],
                            to_numpy(self.classifier(packed)),
                            atol=1e-5, rtol=0)

    def test_padded_batch_rows_equal_single_requests(self):
        # The batch pads every pair to the longest one; alone, the first
        # pair is not padded at all.
        self.assertAllClose(self.results["first_pair"]["probabilities"][0],
                            self.results["pairs"]["probabilities"][0],
                            atol=1e-5, rtol=0)

    def test_bad_strings_give_the_keras_model_outputs(self):
        served = self.results["bad_pairs"]
        packed = self._packed(self.classifier,
                              (utils.strings(BAD_TEXTS),
                               utils.strings(BAD_TEXTS[::-1])))
        self.assertAllFinite(served["probabilities"])
        self.assertAllClose(served["logits"],
                            to_numpy(self.classifier(packed)),
                            atol=1e-5, rtol=0)

    # TensorFlow only: the other model kinds ---------------------------

    @skip_unless_backend("tensorflow")
    def test_backbone_embeddings_match_the_keras_model(self):
        served = self.results["embeddings"]
        preprocessor = BertPreprocessor(self.tokenizer, LENGTH,
                                        dynamic_padding=True)
        packed = preprocessor(list(self.sentences))
        expected = to_numpy(self.backbone(packed))
        np.testing.assert_array_equal(served["padding_mask"],
                                      to_numpy(packed["padding_mask"]))
        self.assertAllClose(served["sequence_output"],
                            expected["sequence_output"], atol=1e-5, rtol=0)
        self.assertAllClose(served["pooled_output"],
                            expected["pooled_output"], atol=1e-5, rtol=0)

    @skip_unless_backend("tensorflow")
    def test_bad_strings_are_packed_per_the_packer(self):
        served = self.results["bad_embeddings"]
        lengths = served["padding_mask"].sum(axis=1).tolist()
        # [CLS] [SEP] only for empty, blank and dropped invalid bytes; the
        # long text is cut to the sequence length; "caf\xc3" keeps "caf".
        self.assertEqual(lengths[:3], [2, 2, 2])
        self.assertGreater(lengths[3], 2)
        self.assertEqual(lengths[4], LENGTH)
        self.assertAllFinite(served["pooled_output"])

    @skip_unless_backend("tensorflow")
    def test_empty_batch_gives_empty_outputs(self):
        served = self.results["no_texts"]
        self.assertEqual(served["pooled_output"].shape, (0, 16))

    @skip_unless_backend("tensorflow")
    def test_token_tags_and_offsets(self):
        served = self.results["tags"]
        words = utils.conll_sentences()
        texts = [" ".join(sentence) for sentence in words]
        preprocessor = self.tagger.preprocessor
        logits = to_numpy(self.tagger(preprocessor([list(w) for w in words])))
        width = served["logits"].shape[1]
        mask = served["padding_mask"] > 0
        self.assertAllClose(served["logits"][mask], logits[:, :width][mask],
                            atol=1e-5, rtol=0)
        vocabulary = self.tokenizer.get_vocabulary()
        checked = 0
        for row, text in enumerate(texts):
            for position in np.flatnonzero(served["token_starts"][row] >= 0):
                token = vocabulary[served["token_ids"][row, position]]
                start = served["token_starts"][row, position]
                end = served["token_ends"][row, position]
                if token != "[UNK]":
                    self.assertEqual(text[start:end].lower(),
                                     token.removeprefix("##"))
                    checked += 1
                self.assertEqual(served["word_starts"][row, position],
                                 int(not token.startswith("##")))
                self.assertEqual(served["tag_ids"][row, position],
                                 np.argmax(logits[row, position]))
        self.assertGreater(checked, 50)
        # [CLS], [SEP] and padding carry no tag.
        self.assertTrue(np.all(served["tag_ids"][:, 0] == -1))
        self.assertTrue(np.all(served["tags"][served["tag_ids"] < 0] == b""))

    @skip_unless_backend("tensorflow")
    def test_answers_match_the_keras_model_and_reference_search(self):
        served = self.results["answers"]
        questions, contexts = utils.squad_examples()
        windows = self.reader.preprocessor.windows(list(questions),
                                                   list(contexts))
        first = np.unique(windows["example_index"], return_index=True)[1]
        inputs = {k: v[first] for k, v in windows["inputs"].items()}
        logits = to_numpy(self.reader(inputs))
        width = served["start_logits"].shape[1]
        mask = served["padding_mask"] > 0
        self.assertAllClose(served["start_logits"][mask],
                            logits[:, :width, 0][mask], atol=1e-5, rtol=0)
        reference = best_answer_spans(
            logits, windows["offsets"][first], np.arange(len(first)),
            list(contexts), n_best_size=LENGTH)
        self.assertEqual([a.decode() for a in served["answer"]],
                         [r["text"] for r in reference])
        self.assertEqual(served["answer_start"].tolist(),
                         [r["start"] for r in reference])
        self.assertTrue(all(r["text"] for r in reference))

    @skip_unless_backend("tensorflow")
    def test_bad_question_and_context_strings(self):
        served = self.results["bad_answers"]
        # BAD_TEXTS[::-1][i] is the context; "" and blank ones hold no
        # token, so there is no answer; the others get a substring.
        contexts = BAD_TEXTS[::-1]
        for row, context in enumerate(contexts):
            answer = served["answer"][row].decode("utf-8")
            if isinstance(context, str) and not context.strip():
                self.assertEqual((answer, served["answer_start"][row]),
                                 ("", -1))
            if isinstance(context, str):
                self.assertIn(answer, context)
        self.assertAllFinite(served["span_score"])

    @skip_unless_backend("tensorflow")
    def test_multiple_choice_matches_the_keras_model(self):
        served = self.results["choices"]
        inputs = self.jobs["choices"][2]
        prompts = [p.decode() for p in inputs["prompt"]]
        choices = [[c.decode() for c in row] for row in inputs["choices"]]
        logits = to_numpy(self.chooser(self.chooser.preprocessor(
            (prompts, choices))))
        self.assertAllClose(served["logits"], logits, atol=1e-5, rtol=0)

    @skip_unless_backend("tensorflow")
    def test_serves_without_keras_installed(self):
        # Keras made unimportable; only tensorflow-text's op libraries.
        results = utils.serve({"pairs": self.jobs["pairs"]},
                              without_keras=True)
        self.assertFalse(results["__modules__"]["keras_imported"])
        self.assertAllClose(results["pairs"]["logits"],
                            self.results["pairs"]["logits"], atol=0, rtol=0)
