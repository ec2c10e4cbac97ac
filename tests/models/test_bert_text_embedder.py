import json
import os
import warnings

import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert import BertBackbone
from keras_bert import BertTextEmbedder
from keras_bert.checkpoints import CheckpointError
from keras_bert.preprocessing import BertTokenizer
from keras_bert.preprocessing.tasks import BertTextEmbedderPreprocessor
from tests.checkpoints import reference_checkpoints as ref
from tests.test_case import TestCase
from tests.test_case import to_numpy

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat",
              "sat", "dog", "ran", "a", "mat", "on", "who", "what", "fish",
              "swam", "bird", "flew"]
# Each query names the animal of its passage.
QUERIES = ["the cat", "a dog", "who swam", "what flew"]
PASSAGES = ["the cat sat on a mat", "a dog ran", "the fish swam",
            "a bird flew"]


def embedder(pooling="mean", sequence_length=12, dynamic_padding=False,
             **kwargs):
    tokenizer = BertTokenizer(VOCABULARY)
    backbone = BertBackbone(vocabulary_size=len(VOCABULARY), num_layers=1,
                            num_heads=2, hidden_dim=16, intermediate_dim=32,
                            max_sequence_length=16, dropout=0.0)
    return BertTextEmbedder(backbone, pooling=pooling, preprocessor=(
        BertTextEmbedderPreprocessor(tokenizer, sequence_length,
                                     dynamic_padding=dynamic_padding)),
        **kwargs)


class BertTextEmbedderTest(TestCase):
    def test_unit_vectors_serialization_and_saving(self):
        model = embedder(pooling="max")
        inputs = model.preprocessor(PASSAGES)
        vectors = to_numpy(model(inputs))
        self.assertEqual(vectors.shape, (4, 16))
        self.assertAllClose(np.linalg.norm(vectors, axis=-1), np.ones(4),
                            atol=1e-6)
        revived = self.run_serialization_test(model)
        self.assertEqual((revived.pooling, revived.normalize), ("max", True))
        self.run_model_saving_test(model, inputs)

    def test_encode_equals_predict_and_the_model_in_input_order(self):
        model = embedder()
        texts = PASSAGES + ["", "cat"] * 20  # more rows than one batch
        expected = to_numpy(model(model.preprocessor(texts)))
        self.assertAllClose(model.encode(texts, batch_size=8, verbose=0),
                            expected, atol=1e-5)
        self.assertAllClose(model.predict(texts, batch_size=8, verbose=0),
                            expected, atol=1e-5)
        self.assertEqual(model.encode("the cat").shape, (16,))
        self.assertEqual(model.encode([]).shape, (0, 16))

    def test_empty_string_is_the_cls_sep_vector(self):
        model = embedder()
        packed = {"token_ids": np.array([[2, 3]]),
                  "segment_ids": np.zeros((1, 2), "int32"),
                  "padding_mask": np.ones((1, 2), "int32")}
        self.assertAllClose(model.encode([""]), to_numpy(model(packed)),
                            atol=1e-6)

    def test_long_texts_are_truncated_with_one_counting_warning(self):
        model = embedder(sequence_length=6)
        long_text = "the cat sat on a mat"  # 6 tokens + 2 special
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            vectors = model.encode([long_text, "a dog", long_text])
        messages = [str(w.message) for w in caught
                    if "truncated" in str(w.message)]
        self.assertEqual(len(messages), 1, messages)
        self.assertIn("2 of 3 texts were longer than sequence_length=6",
                      messages[0])
        self.assertAllClose(vectors[0], model.encode("the cat sat on"),
                            atol=1e-6)

    def test_encode_rejects_non_strings_and_needs_a_preprocessor(self):
        model = embedder()
        with self.assertRaisesRegex(TypeError, "text 1 is a NoneType"):
            model.encode(["a dog", None])
        with self.assertRaisesRegex(ValueError, "needs a preprocessor"):
            BertTextEmbedder(model.backbone).encode(["a dog"])

    def test_columns_give_one_vector_per_column(self):
        model = embedder()
        packed, labels = model.preprocessor((QUERIES, PASSAGES))
        groups = to_numpy(model(packed))
        self.assertEqual(groups.shape, (4, 2, 16))
        self.assertAllClose(groups[:, 1], model.encode(PASSAGES), atol=1e-5)
        self.assertEqual(to_numpy(labels).tolist(), [0, 1, 2, 3])

    def test_fit_on_pairs_ranks_each_passage_first(self):
        model = embedder(dynamic_padding=True)
        model.compile(learning_rate=1e-2)
        history = model.fit(QUERIES * 8, PASSAGES * 8, batch_size=4,
                            epochs=4, shuffle=False, verbose=0)
        losses = history.history["loss"]
        self.assertLess(losses[-1], 0.5 * losses[0])
        scores = model.encode(QUERIES) @ model.encode(PASSAGES).T
        self.assertEqual(np.argmax(scores, axis=1).tolist(), [0, 1, 2, 3])

    def test_fit_on_a_tf_data_dataset_of_triplets(self):
        model = embedder()
        model.compile(learning_rate=1e-3)
        negatives = PASSAGES[1:] + PASSAGES[:1]
        dataset = tf.data.Dataset.from_tensor_slices(
            (QUERIES, PASSAGES, negatives)).batch(4)
        history = model.fit(dataset, epochs=2, verbose=0)
        self.assertTrue(np.all(np.isfinite(history.history["loss"])))
        self.assertFalse(model.backbone.pooler.trainable)


def write_sentence_transformers_dir(directory, modules=None, pooling=None,
                                    transformer_path=""):
    """A tiny sentence-transformers folder around a random HF BERT."""
    model_dir = os.path.join(directory, transformer_path)
    os.makedirs(model_dir, exist_ok=True)
    ref.make_huggingface("BertModel", model_dir)
    modules = modules or [
        ("sentence_transformers.models.Transformer", transformer_path),
        ("sentence_transformers.models.Pooling", "1_Pooling"),
        ("sentence_transformers.models.Normalize", "2_Normalize"),
    ]
    with open(os.path.join(directory, "modules.json"), "w") as f:
        json.dump([{"idx": i, "name": str(i), "path": path, "type": kind}
                   for i, (kind, path) in enumerate(modules)], f)
    os.makedirs(os.path.join(directory, "1_Pooling"), exist_ok=True)
    with open(os.path.join(directory, "1_Pooling", "config.json"), "w") as f:
        json.dump(pooling or {"word_embedding_dimension": 16,
                              "pooling_mode_cls_token": True,
                              "pooling_mode_mean_tokens": False}, f)
    with open(os.path.join(model_dir, "sentence_bert_config.json"), "w") as f:
        json.dump({"max_seq_length": 20, "do_lower_case": False}, f)
    return directory


class SentenceTransformersDirectoryTest(TestCase):
    def test_reads_pooling_normalize_and_length(self):
        directory = write_sentence_transformers_dir(
            self.get_temp_dir(), transformer_path="0_Transformer")
        model = BertTextEmbedder.from_preset(directory)
        self.assertEqual((model.pooling, model.normalize), ("cls", True))
        self.assertEqual(model.preprocessor.sequence_length, 20)

    def test_matches_sentence_transformers_on_a_tiny_model(self):
        st = pytest.importorskip("sentence_transformers")
        directory = write_sentence_transformers_dir(
            self.get_temp_dir(), pooling={"embedding_dimension": 16,
                                          "pooling_mode": "max"})
        texts = ["the cat sat on the mat.", "hello world", "",
                 "bert reads both directions and the dog runs " * 3]
        expected = st.SentenceTransformer(directory, device="cpu").encode(
            texts)
        model = BertTextEmbedder.from_preset(directory)
        self.assertAllClose(model.encode(texts), expected, atol=1e-5)

    def test_refuses_an_unsupported_module_by_name(self):
        directory = write_sentence_transformers_dir(
            self.get_temp_dir(), modules=[
                ("sentence_transformers.models.Transformer", ""),
                ("sentence_transformers.models.Pooling", "1_Pooling"),
                ("sentence_transformers.models.Dense", "2_Dense"),
            ])
        with self.assertRaisesRegex(CheckpointError,
                                    "sentence_transformers.models.Dense"):
            BertTextEmbedder.from_preset(directory)

    def test_refuses_an_unsupported_pooling_mode(self):
        directory = write_sentence_transformers_dir(
            self.get_temp_dir(), pooling={"pooling_mode_mean_sqrt_len_tokens":
                                          True})
        with self.assertRaisesRegex(CheckpointError, "mean_sqrt_len_tokens"):
            BertTextEmbedder.from_preset(directory)

    def test_a_keras_bert_preset_round_trips(self):
        model = embedder(pooling="cls")
        preset = os.path.join(self.get_temp_dir(), "preset")
        model.save_to_preset(preset)
        restored = BertTextEmbedder.from_preset(preset)
        self.assertEqual(restored.pooling, "cls")
        self.assertAllClose(restored.encode(PASSAGES),
                            model.encode(PASSAGES), atol=1e-6)


SENTENCES = "/work/shared/data/sst2/test.tsv"
SQUAD_DEV = "/work/shared/data/squad/dev-v1.1.json"


@pytest.mark.large
class MiniLMParityTest(TestCase):
    """all-MiniLM-L6-v2 against `SentenceTransformer(dir).encode`."""

    def test_vectors_match_sentence_transformers(self):
        st = pytest.importorskip("sentence_transformers")
        if not (os.path.isfile(SENTENCES) and os.path.isfile(SQUAD_DEV)):
            pytest.skip("the shared datasets are not in /work/shared/data")
        with open(SENTENCES, encoding="utf-8") as f:
            sentences = [line.split("\t")[0] for line in f][1:41]
        with open(SQUAD_DEV, encoding="utf-8") as f:
            paragraphs = [p["context"] for p in
                          json.load(f)["data"][0]["paragraphs"][:8]]
        texts = sentences + paragraphs + [""]
        expected = st.SentenceTransformer(ref.MINILM_DIR,
                                          device="cpu").encode(texts)
        model = keras_bert.BertTextEmbedder.from_preset(ref.MINILM_DIR)
        self.assertEqual((model.pooling, model.normalize,
                          model.preprocessor.sequence_length),
                         ("mean", True, 256))
        for share_rows in (True, False):
            actual = model.encode(texts, batch_size=16, share_rows=share_rows)
            self.assertLessEqual(float(np.abs(actual - expected).max()), 1e-5)
