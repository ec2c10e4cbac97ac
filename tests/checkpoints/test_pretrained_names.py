"""Pretrained models by name, from a Hugging Face cache built here.

The cache (in the Hub's own layout, `HF_HUB_OFFLINE=1`) holds the real
all-MiniLM-L6-v2 and tiny random `transformers` checkpoints of each head
type, saved with `save_pretrained` and their `id2label`. keras_bert loads
each by its id; `transformers` and `sentence-transformers` load the same
cached files, and the outputs must agree.
"""

import json
import os
import shutil
import tempfile

import numpy as np

import keras_bert
from keras_bert.checkpoints import CheckpointError
from keras_bert.checkpoints.known_checkpoints import parameter_count
from tests.checkpoints.hub_fixtures import NER_LABELS
from tests.checkpoints.hub_fixtures import SST2_LABELS
from tests.checkpoints.hub_fixtures import add_to_cache
from tests.checkpoints.hub_fixtures import write_task_checkpoints
from tests.checkpoints.reference_checkpoints import TINY_CONFIG
from tests.checkpoints.reference_checkpoints import make_huggingface
from tests.test_case import TestCase

ATOL = 1e-5
TEXTS = ["the cat sat on the mat .", "a dog was happy !", "hello world"]
WORDS = [["the", "cat", "sat"], ["hello", "bert", "reads", "both", "dog"]]


class PretrainedNamesTest(TestCase):

    @classmethod
    def setUpClass(cls):
        from huggingface_hub import constants

        cls.scratch = tempfile.mkdtemp()
        cls.cache, cls.commit = write_task_checkpoints(cls.scratch)
        cls._saved_cache = constants.HF_HUB_CACHE
        constants.HF_HUB_CACHE = cls.cache

    @classmethod
    def tearDownClass(cls):
        from huggingface_hub import constants

        constants.HF_HUB_CACHE = cls._saved_cache
        shutil.rmtree(cls.scratch, ignore_errors=True)

    def reference(self, model_class, repo_id):
        import transformers

        return getattr(transformers, model_class).from_pretrained(
            repo_id, cache_dir=self.cache, local_files_only=True).eval()

    def reference_logits(self, model, texts=TEXTS, pairs=None, words=None):
        import torch
        import transformers

        tokenizer = transformers.AutoTokenizer.from_pretrained(
            model.name_or_path, cache_dir=self.cache, local_files_only=True)
        if words is not None:
            batch = tokenizer(words, is_split_into_words=True, padding=True,
                              return_tensors="pt")
        else:
            batch = tokenizer(texts, pairs, padding=True,
                              return_tensors="pt")
        with torch.no_grad():
            return model(**batch), batch

    # --- Names --------------------------------------------------------

    def test_minilm_by_handle_id_and_revision(self):
        import torch

        reference = self.reference("BertModel",
                                   "sentence-transformers/all-MiniLM-L6-v2")
        inputs = {"token_ids": np.array([[101, 1996, 4937, 2938, 102]]),
                  "segment_ids": np.zeros((1, 5), "int32"),
                  "padding_mask": np.ones((1, 5), "int32")}
        with torch.no_grad():
            expected = reference(
                input_ids=torch.tensor(inputs["token_ids"])
            ).last_hidden_state.numpy()
        for name in ("hf://sentence-transformers/all-MiniLM-L6-v2",
                     "sentence-transformers/all-MiniLM-L6-v2",
                     f"hf://sentence-transformers/all-MiniLM-L6-v2@"
                     f"{self.commit}",
                     "sentence-transformers/all-MiniLM-L6-v2@main"):
            backbone = keras_bert.BertBackbone.from_preset(name)
            self.assertAllClose(backbone(inputs)["sequence_output"],
                                expected, atol=ATOL, msg=name)

    def test_embedder_by_name_matches_sentence_transformers(self):
        from sentence_transformers import SentenceTransformer

        name = "sentence-transformers/all-MiniLM-L6-v2"
        embedder = keras_bert.BertTextEmbedder.from_preset(name)
        reference = SentenceTransformer(name, cache_folder=self.cache)
        sentences = ["A man is eating food.", "The weather is lovely."]
        self.assertAllClose(embedder.encode(sentences),
                            reference.encode(sentences), atol=ATOL)

    def test_legacy_id_means_google_bert(self):
        pretrainer = keras_bert.BertPretrainer.from_preset(
            "bert-base-uncased")
        reference = self.reference("BertForPreTraining",
                                   "google-bert/bert-base-uncased")
        self.assertAllClose(
            pretrainer.get_layer("mlm_head").output_bias,
            reference.cls.predictions.bias.detach().numpy(), atol=0)

    def test_tokenizer_and_preprocessor_by_name(self):
        tokenizer = keras_bert.BertTokenizer.from_preset("org/tiny-sst2")
        preprocessor = keras_bert.BertPreprocessor.from_preset(
            "org/tiny-sst2", sequence_length=8)
        self.assertEqual(tokenizer.vocabulary_size(), TINY_CONFIG["vocab_size"])
        self.assertEqual(preprocessor.sequence_length, 8)

    # --- Heads and labels ---------------------------------------------

    def test_classifier_loads_head_and_label_names(self):
        classifier = keras_bert.BertClassifier.from_preset("org/tiny-sst2")
        self.assertEqual(classifier.label_names, SST2_LABELS)
        reference = self.reference("BertForSequenceClassification",
                                   "org/tiny-sst2")
        expected, _ = self.reference_logits(reference)
        logits = classifier.predict(TEXTS, verbose=0)
        self.assertAllClose(logits, expected.logits.numpy(), atol=ATOL)
        names = [reference.config.id2label[int(i)]
                 for i in expected.logits.argmax(-1)]
        self.assertEqual(classifier.predict_labels(TEXTS, verbose=0), names)
        # The names survive save and load.
        path = os.path.join(self.get_temp_dir(), "preset")
        classifier.save_to_preset(path)
        self.assertEqual(keras_bert.BertClassifier.from_preset(
            path).label_names, SST2_LABELS)

    def test_label_names_go_back_out_to_huggingface(self):
        import transformers

        classifier = keras_bert.BertClassifier.from_preset("org/tiny-sst2")
        path = os.path.join(self.get_temp_dir(), "hf")
        keras_bert.export_to_huggingface(classifier, path)
        config = transformers.AutoConfig.from_pretrained(path)
        self.assertEqual(config.id2label, dict(enumerate(SST2_LABELS)))

    def test_token_classifier_loads_tags(self):
        tagger = keras_bert.BertTokenClassifier.from_preset("org/tiny-ner")
        self.assertEqual(tagger.label_names, NER_LABELS)
        reference = self.reference("BertForTokenClassification",
                                   "org/tiny-ner")
        expected, batch = self.reference_logits(reference, words=WORDS)
        tags = tagger.predict_labels(WORDS, verbose=0)
        for row, sentence in enumerate(WORDS):
            word_ids = batch.word_ids(row)
            firsts = [word_ids.index(i) for i in range(len(sentence))]
            self.assertEqual(tags[row], [
                NER_LABELS[int(expected.logits[row, p].argmax())]
                for p in firsts])

    def test_question_answerer_loads_span_head(self):
        reader = keras_bert.BertQuestionAnswerer.from_preset("org/tiny-squad")
        reference = self.reference("BertForQuestionAnswering",
                                   "org/tiny-squad")
        expected, batch = self.reference_logits(
            reference, texts=["who sat ?", "a dog ?"],
            pairs=["the cat sat on the mat .", "it was a happy dog ."])
        outputs = reader.predict_on_batch({
            "token_ids": batch["input_ids"].numpy(),
            "segment_ids": batch["token_type_ids"].numpy(),
            "padding_mask": batch["attention_mask"].numpy()})
        self.assertAllClose(
            np.moveaxis(np.asarray(outputs), -1, 0),
            np.stack([expected.start_logits.numpy(),
                      expected.end_logits.numpy()]), atol=ATOL)

    def test_cross_encoder_scores_as_sentence_transformers(self):
        from sentence_transformers import CrossEncoder

        name = "cross-encoder/tiny-ms-marco"
        reranker = keras_bert.BertCrossEncoder.from_preset(name)
        self.assertEqual(reranker.score_activation, "sigmoid")
        pairs = [("who sat ?", "the cat sat on the mat ."),
                 ("a dog ?", "hello world")]
        reference = CrossEncoder(name, cache_folder=self.cache)
        self.assertAllClose(
            reranker.score(*zip(*pairs), verbose=0),
            reference.predict(pairs), atol=ATOL)

    def test_missing_head_is_said_in_one_line(self):
        with self.assertLogs("keras_bert.checkpoints", "WARNING") as logs:
            keras_bert.BertClassifier.from_preset(
                "google-bert/bert-base-uncased", num_classes=3)
        self.assertTrue(any("classifier_head" in line and "random" in line
                            for line in logs.output), logs.output)

    # --- Known checkpoints --------------------------------------------

    def test_presets_table_counts_weights_as_transformers(self):
        import transformers

        presets = keras_bert.BertBackbone.presets()
        self.assertIn("cross-encoder/ms-marco-MiniLM-L-6-v2", presets)
        self.assertEqual(presets["tiny"]["num_layers"], 2)
        for hidden, layers, vocabulary in ((16, 2, 40), (24, 3, 50)):
            config = transformers.BertConfig(
                vocab_size=vocabulary, hidden_size=hidden,
                num_hidden_layers=layers, num_attention_heads=2,
                intermediate_size=4 * hidden, max_position_embeddings=512)
            expected = transformers.BertModel(config).num_parameters()
            self.assertEqual(parameter_count(
                num_layers=layers, hidden_dim=hidden,
                intermediate_dim=4 * hidden, vocabulary_size=vocabulary),
                expected)

    # --- Bad names ----------------------------------------------------

    def assertRaisesNaming(self, call, *words):
        with self.assertRaises(CheckpointError) as caught:
            call()
        for word in words:
            self.assertIn(word, str(caught.exception))
        return str(caught.exception)

    def test_uncached_name_offline_says_where_and_how(self):
        self.assertRaisesNaming(
            lambda: keras_bert.BertBackbone.from_preset("org/not-cached"),
            "org/not-cached", self.cache, "HF_HUB_OFFLINE",
            "hf download org/not-cached")

    def test_uncached_revision_offline(self):
        self.assertRaisesNaming(
            lambda: keras_bert.BertBackbone.from_preset(
                "hf://org/tiny-sst2@v2"), "revision 'v2'", self.cache)

    def test_mistyped_path_and_name(self):
        for name in ("./runs/nope", "/no/such/dir", "bert_tiny_uncsed"):
            self.assertRaisesNaming(
                lambda: keras_bert.BertBackbone.from_preset(name),
                "no such directory", "Hugging Face id")

    def test_other_architecture_refused_before_weights(self):
        source = os.path.join(self.get_temp_dir(), "roberta")
        os.makedirs(source)
        with open(os.path.join(source, "config.json"), "w") as f:
            json.dump({"model_type": "roberta", "num_hidden_layers": 2}, f)
        # No weights at all: the config alone must stop the load.
        add_to_cache(self.cache, "FacebookAI/tiny-roberta", source)
        self.assertRaisesNaming(
            lambda: keras_bert.BertClassifier.from_preset(
                "FacebookAI/tiny-roberta", num_classes=2),
            "FacebookAI/tiny-roberta", "'roberta'")

    def test_pickle_only_repository_as_a_local_directory(self):
        source = os.path.join(self.get_temp_dir(), "pickled")
        import torch

        model = make_huggingface("BertModel", source)
        os.remove(os.path.join(source, "model.safetensors"))
        torch.save(model.state_dict(),
                   os.path.join(source, "pytorch_model.bin"))
        add_to_cache(self.cache, "org/pickled", source)
        self.assertRaisesNaming(
            lambda: keras_bert.BertBackbone.from_preset("org/pickled"),
            "pytorch_model.bin", "allow_pickle=True")
        backbone = keras_bert.BertBackbone.from_preset("org/pickled",
                                                       allow_pickle=True)
        self.assertEqual(backbone.num_layers, TINY_CONFIG["num_hidden_layers"])
