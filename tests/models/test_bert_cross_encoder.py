import os

import keras
import numpy as np

from keras_bert import BertBackbone
from keras_bert import BertCrossEncoder
from keras_bert.preprocessing import BertTokenizer
from keras_bert.preprocessing.tasks import BertCrossEncoderPreprocessor
from tests.checkpoints import reference_checkpoints as ref
from tests.models.test_bert_text_embedder import PASSAGES
from tests.models.test_bert_text_embedder import QUERIES
from tests.models.test_bert_text_embedder import VOCABULARY
from tests.test_case import TestCase
from tests.test_case import to_numpy


def cross_encoder(objective="pointwise", sequence_length=12):
    # A wide initialization: at BERT's 0.02 the random block barely
    # changes the residual stream, so [CLS] (and every score) starts out
    # the same for every pair and the tiny model learns very slowly.
    backbone = BertBackbone(vocabulary_size=len(VOCABULARY), num_layers=1,
                            num_heads=2, hidden_dim=16, intermediate_dim=32,
                            max_sequence_length=16, dropout=0.0,
                            initializer_range=0.2)
    return BertCrossEncoder(
        backbone, objective=objective, dropout=0.0,
        preprocessor=BertCrossEncoderPreprocessor(
            BertTokenizer(VOCABULARY), sequence_length=sequence_length))


def shifted(items, by=1):
    return items[by:] + items[:by]


class BertCrossEncoderTest(TestCase):
    def test_builds_after_a_functional_task_in_the_same_process(self):
        # Keras rebases a model class on Functional when a Functional
        # instance of it is built; the subclassed tasks share no such
        # class with the Functional ones (TaskMixin).
        from keras_bert import BertClassifier
        from keras_bert import BertTextEmbedder

        BertClassifier(BertBackbone(vocabulary_size=len(VOCABULARY),
                                    num_layers=1, num_heads=2, hidden_dim=8,
                                    intermediate_dim=16), num_classes=2)
        model = cross_encoder()
        pairs = model.preprocessor((QUERIES, PASSAGES))
        self.assertEqual(to_numpy(model(pairs)).shape, (len(QUERIES),))
        embedder = BertTextEmbedder(BertBackbone(
            vocabulary_size=len(VOCABULARY), num_layers=1, num_heads=2,
            hidden_dim=8, intermediate_dim=16))
        self.assertEqual(to_numpy(embedder(pairs)).shape, (len(QUERIES), 8))

    def test_pairs_and_groups_serialization_and_saving(self):
        model = cross_encoder()
        pairs = model.preprocessor((QUERIES, PASSAGES))
        scores = to_numpy(model(pairs))
        self.assertEqual(scores.shape, (4,))
        groups = to_numpy(model(model.preprocessor(
            (QUERIES, [[p, q] for p, q in zip(PASSAGES, shifted(PASSAGES))]))))
        self.assertEqual(groups.shape, (4, 2))
        # A group scores each of its pairs as the pair alone does.
        self.assertAllClose(groups[:, 0], scores, atol=1e-5)
        revived = self.run_serialization_test(model)
        self.assertEqual(revived.objective, "pointwise")
        self.run_model_saving_test(model, pairs)

    def test_pointwise_fit_then_rerank(self):
        model = cross_encoder()
        model.compile(learning_rate=5e-3)
        self.assertIsInstance(model.loss, keras.losses.BinaryCrossentropy)
        # Each query with its own passage (1) and with one off-topic
        # passage (0), which the model soon recognizes.
        queries = QUERIES * 2
        passages = PASSAGES + ["on a mat"] * 4
        labels = np.array([1.0] * 4 + [0.0] * 4)
        history = model.fit((queries, passages), labels, batch_size=8,
                            epochs=40, verbose=0)
        self.assertLess(history.history["loss"][-1],
                        0.5 * history.history["loss"][0])
        for index, query in enumerate(QUERIES):
            order, scores = model.rerank(query, [PASSAGES[index],
                                                 "on a mat"])
            self.assertEqual(order.tolist(), [0, 1])
            self.assertGreater(scores[0], scores[1])

    def test_listwise_fit_picks_the_relevant_passage(self):
        model = cross_encoder(objective="listwise")
        model.compile(learning_rate=5e-3)
        self.assertIsInstance(model.loss,
                              keras.losses.SparseCategoricalCrossentropy)
        groups = [[shifted(PASSAGES, 1)[i], PASSAGES[i],
                   shifted(PASSAGES, 2)[i]] for i in range(4)]
        history = model.fit((QUERIES, groups), np.ones(4, "int32"),
                            batch_size=4, epochs=30, verbose=0)
        self.assertLess(history.history["loss"][-1],
                        0.5 * history.history["loss"][0])
        self.assertEqual(history.history["accuracy"][-1], 1.0)

    def test_score_matches_the_model_and_checks_lengths(self):
        model = cross_encoder()
        queries, passages = QUERIES * 10, PASSAGES * 10
        expected = to_numpy(model(model.preprocessor((queries, passages))))
        self.assertAllClose(model.score(queries, passages, batch_size=8,
                                        verbose=0), expected, atol=1e-5)
        with self.assertRaisesRegex(ValueError, "4 and 3"):
            model.score(QUERIES, PASSAGES[:3])

    def test_loads_a_huggingface_sequence_classifier_with_its_head(self):
        import torch
        import transformers

        directory = self.get_temp_dir()
        reference = ref.make_huggingface(
            "BertForSequenceClassification", directory, num_labels=1)
        model = BertCrossEncoder.from_preset(directory)
        self.assertIsNotNone(model.preprocessor)
        queries, passages = ["the cat sat", "hello"], ["on the mat", "world"]
        encoded = transformers.BertTokenizerFast.from_pretrained(directory)(
            queries, passages, padding=True, return_tensors="pt")
        with torch.no_grad():
            logits = reference(**encoded).logits[:, 0]
        # A one-label checkpoint scores through a sigmoid, as
        # sentence-transformers' CrossEncoder scores it.
        self.assertEqual(model.score_activation, "sigmoid")
        expected = torch.sigmoid(logits).numpy()
        self.assertAllClose(model.score(queries, passages), expected,
                            atol=1e-4, rtol=1e-4)
        preset = os.path.join(self.get_temp_dir(), "preset")
        model.save_to_preset(preset)
        self.assertAllClose(BertCrossEncoder.from_preset(preset).score(
            queries, passages), expected, atol=1e-4, rtol=1e-4)
        linear = BertCrossEncoder.from_preset(directory,
                                              score_activation="linear")
        self.assertAllClose(linear.score(queries, passages), logits.numpy(),
                            atol=1e-4, rtol=1e-4)
