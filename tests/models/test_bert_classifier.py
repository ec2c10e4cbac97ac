from unittest import mock

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertBackbone
from keras_bert import BertClassifier
from keras_bert.preprocessing import BertPreprocessor
from keras_bert.preprocessing import BertTokenizer
from keras_bert.preprocessing.tasks import task_dataset
from tests.models.test_bert_backbone import TINY
from tests.test_case import TestCase
from tests.test_case import to_numpy

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "film",
              "was", "good", "bad", "very", "a", "plot"]
# The label is whether "good" or "bad" is in the sentence.
SENTENCES = ["the film was good", "a good plot", "very good", "good film",
             "the film was bad", "a bad plot", "very bad", "bad film"]
LABELS = np.array([1, 1, 1, 1, 0, 0, 0, 0])


def packed(token_ids, second_from=None):
    """The backbone's inputs for padded token ids (0 is padding); segment 1
    from position `second_from` on."""
    token_ids = np.asarray(token_ids, "int32")
    padding_mask = (token_ids != 0).astype("int32")
    segment_ids = np.zeros_like(token_ids)
    if second_from is not None:
        segment_ids[:, second_from:] = 1
    return {"token_ids": token_ids, "segment_ids": segment_ids * padding_mask,
            "padding_mask": padding_mask}


def tiny_backbone(vocabulary_size=50):
    return BertBackbone(**{**TINY, "vocabulary_size": vocabulary_size})


def classifier(num_classes=2, preprocessor=None, vocabulary_size=50):
    return BertClassifier(tiny_backbone(vocabulary_size),
                          num_classes=num_classes, dropout=0.0,
                          preprocessor=preprocessor)


class BertClassifierTest(TestCase):
    def test_output_shape_serialization_and_saving(self):
        model = classifier(num_classes=3)
        inputs = packed([[2, 8, 9, 3, 0], [2, 11, 3, 0, 0]])
        logits = model(inputs)
        self.assertEqual(tuple(logits.shape), (2, 3))
        self.assertEqual(keras.backend.standardize_dtype(logits.dtype),
                         "float32")
        revived = self.run_serialization_test(model)
        self.assertEqual((revived.num_classes, revived.dropout), (3, 0.0))
        self.run_model_saving_test(model, inputs)

    def test_rejects_zero_classes(self):
        with self.assertRaisesRegex(ValueError, "num_classes must be >= 1"):
            classifier(num_classes=0)

    def test_regression_head_uses_mean_squared_error(self):
        model = classifier(num_classes=1)
        model.compile()
        self.assertIsInstance(model.loss, keras.losses.MeanSquaredError)
        inputs = packed([[2, 8, 3, 0], [2, 9, 10, 3], [2, 11, 3, 0]])
        targets = np.array([0.5, -1.0, 2.0], "float32")
        scores = to_numpy(model(inputs))
        self.assertEqual(scores.shape, (3, 1))
        loss = model.evaluate(inputs, targets, verbose=0, return_dict=True)
        expected = np.mean((scores[:, 0] - targets) ** 2)
        self.assertAllClose(loss["loss"], expected, atol=1e-5, rtol=1e-5)
        self.assertIn("mae", loss)

    def test_classification_head_uses_cross_entropy(self):
        model = classifier(num_classes=3)
        model.compile()
        inputs = packed([[2, 8, 3, 0], [2, 9, 10, 3]])
        labels = np.array([2, 0])
        logits = to_numpy(model(inputs)).astype("float64")
        log_probabilities = logits - np.log(np.exp(logits).sum(-1,
                                                                keepdims=True))
        expected = -np.mean(log_probabilities[[0, 1], labels])
        loss = model.evaluate(inputs, labels, verbose=0, return_dict=True)
        self.assertAllClose(loss["loss"], expected, atol=1e-5, rtol=1e-5)

    def test_learns_from_raw_strings(self):
        tokenizer = BertTokenizer(VOCABULARY)
        model = classifier(
            preprocessor=BertPreprocessor(tokenizer, sequence_length=8),
            vocabulary_size=len(VOCABULARY))
        model.compile(learning_rate=1e-2, num_train_steps=None)
        # Several steps per epoch: each epoch restarts the tf.data pipeline.
        history = model.fit(SENTENCES * 8, np.tile(LABELS, 8), batch_size=8,
                            epochs=5, verbose=0)
        losses = history.history["loss"]
        self.assertLess(losses[-1], 0.3 * losses[0])
        logits = model.predict(SENTENCES, batch_size=8, verbose=0)
        self.assertEqual(np.argmax(logits, -1).tolist(), LABELS.tolist())

    @pytest.mark.slow
    def test_small_raw_input_is_preprocessed_at_once_as_the_pipeline_does(self):
        model = classifier(
            preprocessor=BertPreprocessor(BertTokenizer(VOCABULARY),
                                          sequence_length=16),
            vocabulary_size=len(VOCABULARY))
        weights = np.linspace(0.5, 2.0, len(LABELS))
        for x, buckets in ((SENTENCES, {8}),
                           ((SENTENCES, SENTENCES[::-1]), {8, 16})):
            # Under MAX_EAGER_EXAMPLES: no tf.data pipeline at all, and
            # batches padded to their length bucket (eager PyTorch: their
            # longest row), not to 16.
            with mock.patch.object(task_dataset, "preprocessed_batches",
                                   side_effect=AssertionError("pipeline")), \
                    mock.patch.object(model, "predict_on_batch",
                                      wraps=model.predict_on_batch) as run:
                logits = model.predict(x, batch_size=3, verbose=0)
                loss = model.evaluate(x, LABELS, sample_weight=weights,
                                      batch_size=3, verbose=0)
            self.assertPaddedToBuckets(
                [call.args[0] for call in run.call_args_list], 3, buckets)
            with mock.patch.object(task_dataset, "MAX_EAGER_EXAMPLES", 4):
                streamed = model.predict(x, batch_size=3, verbose=0)
                streamed_loss = model.evaluate(
                    x, LABELS, sample_weight=weights, batch_size=3,
                    verbose=0)
            self.assertEqual(logits.shape, (len(LABELS), 2))
            self.assertAllClose(logits, streamed, atol=1e-5)
            self.assertAllClose(loss, streamed_loss, atol=1e-6)

    @pytest.mark.slow
    def test_fit_on_raw_strings_keeps_one_iterator_for_every_epoch(self):
        # A new tf.data iterator instantiates the preprocessing function
        # again (0.3-0.5 s of graph optimization for a pair preprocessor).
        model = classifier(
            preprocessor=BertPreprocessor(BertTokenizer(VOCABULARY),
                                          sequence_length=8),
            vocabulary_size=len(VOCABULARY))
        model.compile(learning_rate=1e-3, num_train_steps=100)
        make_iterator = tf.data.Dataset.__iter__
        iterators = []

        def counted(dataset):
            iterators.append(dataset)
            return make_iterator(dataset)

        counts = []
        with mock.patch.object(tf.data.Dataset, "__iter__", counted):
            # The first fit may take one more (JAX builds its training
            # state from a first batch).
            for epochs in (1, 1, 4):
                before = len(iterators)
                history = model.fit(SENTENCES * 2, np.tile(LABELS, 2),
                                    batch_size=6, epochs=epochs, verbose=0)
                counts.append(len(iterators) - before)
        self.assertEqual(counts[2], counts[1])
        # Each epoch is still one pass: 3 batches of 6, 6 and 4 examples.
        self.assertEqual(int(model.optimizer.iterations), (1 + 1 + 4) * 3)
        self.assertEqual(len(history.history["loss"]), 4)

    def test_predict_runs_the_preprocessor_on_strings_and_pairs(self):
        preprocessor = BertPreprocessor(BertTokenizer(VOCABULARY),
                                        sequence_length=8)
        model = classifier(preprocessor=preprocessor,
                           vocabulary_size=len(VOCABULARY))
        single = ["the film", "a plot"]
        pairs = (single, ["was good", "very bad"])
        for x in (single, pairs):
            expected = to_numpy(model(preprocessor(x)))
            actual = model.predict(x, verbose=0)
            self.assertAllClose(actual, expected, atol=1e-5)
        # The second segment changes the output: the pair is really packed.
        difference = model.predict(pairs, verbose=0) - to_numpy(
            model(preprocessor(single)))
        self.assertGreater(np.abs(difference).max(), 1e-6)


class HeadSizeFromConfigTest(TestCase):
    def test_a_config_s_head_size_is_checked_before_the_head_is_built(self):
        from keras_bert.checkpoints import CheckpointError

        model = BertClassifier(BertBackbone(**TINY), num_classes=2)
        for bad in (10**9, "2", 0):
            config = {**model.get_config(), "num_classes": bad}
            with self.assertRaisesRegex(CheckpointError,
                                        "BertClassifier config: num_classes"):
                BertClassifier.from_config(config)
