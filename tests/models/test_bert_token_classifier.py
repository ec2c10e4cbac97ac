import os

import keras
import numpy as np

from keras_bert import BertTokenClassifier
from keras_bert.labels import IGNORE_LABEL
from keras_bert.preprocessing import BertTokenizer
from keras_bert.preprocessing.tasks import BertTokenClassifierPreprocessor
from tests.models.test_bert_classifier import packed
from tests.models.test_bert_classifier import tiny_backbone
from tests.test_case import TestCase
from tests.test_case import to_numpy

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "john", "mary",
              "lives", "sat", "in", "york", "##shire", "new", "##castle",
              "paris", "."]
# Tags: 0 "O", 1 person, 2 place. "Yorkshire" and "Newcastle" are two
# WordPieces each: the tag must be learned and read on the first.
SENTENCES = [["John", "lives", "in", "Yorkshire", "."],
             ["Mary", "sat", "in", "Newcastle"],
             ["Newcastle", "John", "sat"],
             ["Paris", "lives", "in", "Mary", "."]]
TAGS = [[1, 0, 0, 2, 0], [1, 0, 0, 2], [2, 1, 0], [2, 0, 0, 1, 0]]


def tagger(num_classes=3, preprocessor=None, vocabulary_size=50):
    return BertTokenClassifier(tiny_backbone(vocabulary_size),
                               num_classes=num_classes, dropout=0.0,
                               preprocessor=preprocessor)


class BertTokenClassifierTest(TestCase):
    def test_output_shape_serialization_and_saving(self):
        model = tagger(num_classes=5)
        inputs = packed([[2, 8, 9, 3, 0], [2, 11, 3, 0, 0]])
        self.assertEqual(tuple(model(inputs).shape), (2, 5, 5))
        revived = self.run_serialization_test(model)
        self.assertEqual(revived.num_classes, 5)
        self.run_model_saving_test(model, inputs)

    def test_rejects_a_single_class(self):
        with self.assertRaisesRegex(ValueError, "num_classes must be >= 2"):
            tagger(num_classes=1)

    def test_loss_averages_over_labelled_positions_only(self):
        rng = np.random.default_rng(0)
        logits = rng.normal(size=(2, 5, 3)).astype("float32")
        labels = np.array([[IGNORE_LABEL, 1, 2, IGNORE_LABEL, IGNORE_LABEL],
                           [IGNORE_LABEL, 0, IGNORE_LABEL, 2, IGNORE_LABEL]])
        loss_fn = tagger().default_loss()
        loss = float(to_numpy(loss_fn(labels, logits)))
        kept = labels != IGNORE_LABEL
        log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
        expected = -np.mean(log_p[kept, labels[kept]])
        self.assertAllClose(loss, expected, atol=1e-5, rtol=1e-5)
        # Whatever the model says at ignored positions does not count.
        changed = logits.copy()
        changed[~kept] = 50.0 * rng.normal(size=changed[~kept].shape)
        self.assertAllClose(float(to_numpy(loss_fn(labels, changed))), loss,
                            atol=1e-5, rtol=1e-5)

    def test_learns_word_tags_on_first_pieces(self):
        preprocessor = BertTokenClassifierPreprocessor(
            BertTokenizer(VOCABULARY), sequence_length=10)
        model = tagger(preprocessor=preprocessor,
                       vocabulary_size=len(VOCABULARY))
        model.compile(learning_rate=1e-2, num_train_steps=None)
        pooler = to_numpy(model.backbone.pooler.kernel)
        # Several steps per epoch: each epoch restarts the tf.data pipeline.
        # No warning that the unread pooler has no gradient (TensorFlow).
        with self.assertNoWarningAbout("Gradients do not exist"):
            history = model.fit(SENTENCES * 8, TAGS * 8, batch_size=4,
                                epochs=4, verbose=0)
        # Nor any weight decay of it (JAX gives it a zero gradient).
        np.testing.assert_array_equal(
            to_numpy(model.backbone.pooler.kernel), pooler)
        losses = history.history["loss"]
        self.assertLess(losses[-1], 0.3 * losses[0])
        # One tag per word, read at each word's first piece.
        self.assertEqual(model.predict_words(SENTENCES, verbose=0), TAGS)
        # The accuracy is over labelled positions only (the sample weights
        # zero the rest), so it is exact here though [CLS], [SEP],
        # padding and "##" pieces were never trained.
        scores = model.evaluate(SENTENCES, TAGS, verbose=0, return_dict=True)
        self.assertEqual(scores["accuracy"], 1.0)

    def test_a_loaded_tagger_keeps_its_pooler_out_of_weight_decay(self):
        # The optimizer's config cannot name variables: loading adds the
        # unread pooler to its exclusions again.
        path = os.path.join(self.get_temp_dir(), "tagger.keras")
        tagger().save(path)
        loaded = keras.saving.load_model(path)
        pooler = to_numpy(loaded.backbone.pooler.kernel)
        loaded.fit(packed([[2, 8, 9, 3, 0], [2, 11, 3, 0, 0]]),
                   np.ones((2, 5), "int32"), epochs=2, verbose=0)
        np.testing.assert_array_equal(
            to_numpy(loaded.backbone.pooler.kernel), pooler)

    def test_words_cut_off_by_the_sequence_length_get_tag_zero(self):
        preprocessor = BertTokenClassifierPreprocessor(
            BertTokenizer(VOCABULARY), sequence_length=6)
        model = tagger(preprocessor=preprocessor,
                       vocabulary_size=len(VOCABULARY))
        # Force every token's prediction to tag 2 through the head's bias.
        head = model.token_classifier_head
        head.set_weights([np.zeros_like(head.kernel),
                          np.array([0.0, 0.0, 5.0], "float32")])
        words = [["Yorkshire", "John", "lives", "in", "Paris"]]
        # Room for 4 pieces: york ##shire john lives; "in", "Paris" cut.
        self.assertEqual(model.predict_words(words, verbose=0),
                         [[2, 2, 2, 0, 0]])

    def test_predict_pads_each_batch_to_its_bucket_only(self):
        from unittest import mock

        from keras_bert.preprocessing.tasks import task_dataset

        model = tagger(preprocessor=BertTokenClassifierPreprocessor(
            BertTokenizer(VOCABULARY), sequence_length=16),
            vocabulary_size=len(VOCABULARY))
        words = SENTENCES * 2
        with mock.patch.object(model, "predict_on_batch",
                               wraps=model.predict_on_batch) as run:
            logits = model.predict(words, batch_size=3, verbose=0)
            tags = model.predict_words(words, batch_size=3, verbose=0)
        # 5-7 tokens a sentence: bucket 8 (eager PyTorch: the batch's
        # longest row), not the packed 16.
        self.assertPaddedToBuckets(
            [call.args[0] for call in run.call_args_list], 3, {8})
        with mock.patch.object(task_dataset, "MAX_EAGER_EXAMPLES", 4):
            streamed = model.predict(words, batch_size=3, verbose=0)
            streamed_tags = model.predict_words(words, batch_size=3,
                                                verbose=0)
        mask = model.preprocessor(words)["padding_mask"]
        mask = to_numpy(mask).astype(bool)
        self.assertEqual(logits.shape, (8, 16, 3))
        self.assertAllClose(logits[mask], streamed[mask], atol=1e-5)
        # Padded positions hold 0, whatever bucket their row ran in.
        self.assertTrue(np.all(logits[~mask] == 0))
        self.assertEqual(tags, streamed_tags)
