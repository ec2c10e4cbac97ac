"""Labels are checked where they enter `fit` and `evaluate`, before the
first step, on every backend (issue 52, case 7)."""

import numpy as np

import keras_bert
from keras_bert.preprocessing.tasks import BertTokenClassifierPreprocessor
from tests.models.test_bert_token_classifier import SENTENCES
from tests.models.test_bert_token_classifier import TAGS
from tests.models.test_bert_token_classifier import VOCABULARY
from tests.models.test_bert_token_classifier import tagger
from tests.test_case import TestCase

TEXTS = ["john lives in paris .", "mary sat in york .", "paris .",
         "john sat ."]


def classifier():
    tokenizer = keras_bert.BertTokenizer(VOCABULARY)
    backbone = keras_bert.BertBackbone(
        vocabulary_size=len(VOCABULARY), num_layers=1, num_heads=2,
        hidden_dim=8, intermediate_dim=16, max_sequence_length=16)
    return keras_bert.BertClassifier(
        backbone, num_classes=2,
        preprocessor=keras_bert.BertPreprocessor(tokenizer, 8))


class LabelChecksTest(TestCase):
    def assertRefusedBeforeTraining(self, model, pattern, *args, **kwargs):
        steps = int(model.optimizer.iterations)
        with self.assertRaisesRegex(ValueError, pattern):
            model.fit(*args, epochs=1, verbose=0, **kwargs)
        self.assertEqual(int(model.optimizer.iterations), steps)

    def test_string_labels_say_how_to_map_them(self):
        self.assertRefusedBeforeTraining(
            classifier(), r"BertClassifier: the labels are strings \('neg', "
            r"'pos'\); the model takes class ids. Map them to 0..N-1 first, "
            r"e.g. `names = sorted\(set\(y\)\)",
            TEXTS, ["pos", "neg", "pos", "neg"])

    def test_string_labels_are_mapped_by_the_models_label_names(self):
        model = classifier()
        model.label_names = ["neg", "pos"]
        history = model.fit(TEXTS, ["pos", "neg", "pos", "neg"], epochs=1,
                            batch_size=4, verbose=0)
        self.assertTrue(np.isfinite(history.history["loss"][0]))
        self.assertRefusedBeforeTraining(
            model, r"label 'meh' at y\[2\] is not one of the model's "
            r"label_names \(neg, pos\)", TEXTS, ["pos", "neg", "meh", "neg"])

    def test_an_id_outside_the_classes_names_its_position(self):
        # It trained silently to a nan loss before.
        self.assertRefusedBeforeTraining(
            classifier(), r"label 2 at y\[3\] is not a class id: the model "
            r"has num_classes=2, ids 0..1", TEXTS, np.array([0, 1, 1, 2]))
        self.assertRefusedBeforeTraining(
            classifier(), r"label -1 at y\[0\]", TEXTS, [1, 0, 1, 0],
            validation_data=(TEXTS, [-1, 0, 1, 0]))
        with self.assertRaisesRegex(ValueError, r"label 0.5 at y\[1\]"):
            classifier().evaluate(TEXTS, [0, 0.5, 1, 1], verbose=0)

    def test_regression_takes_numbers_and_embedders_take_texts(self):
        from keras_bert.models.label_checks import checked_labels

        regressor = keras_bert.BertClassifier(
            classifier().backbone, num_classes=1)
        with self.assertRaisesRegex(ValueError, "a regression takes "
                                    "numbers"):
            regressor.fit(np.zeros((2, 4), "int32"), ["0.5", "high"])
        embedder = keras_bert.BertTextEmbedder(classifier().backbone)
        self.assertEqual(checked_labels(embedder, TEXTS), TEXTS)

    def test_per_word_tags_outside_the_classes(self):
        model = tagger(preprocessor=BertTokenClassifierPreprocessor(
            keras_bert.BertTokenizer(VOCABULARY, lowercase=True), 16),
            vocabulary_size=len(VOCABULARY))
        tags = [list(sentence) for sentence in TAGS]
        tags[2][1] = 3
        self.assertRefusedBeforeTraining(
            model, r"label 3 at y\[2\]\[1\] is not a class id", SENTENCES,
            tags)
