"""`fit` and `evaluate` on raw input cut the padding no row of a batch uses
(`TaskMixin.trims_padding`), and train and score as on the full batches."""

from unittest import mock

import keras
import pytest

from keras_bert import BertBackbone
from keras_bert import BertClassifier
from keras_bert import BertTokenClassifier
from keras_bert.preprocessing import BertPreprocessor
from keras_bert.preprocessing import BertTokenizer
from keras_bert.preprocessing.tasks import BertTokenClassifierPreprocessor
from tests.models import test_bert_classifier as classify
from tests.models import test_bert_token_classifier as tag
from tests.models.test_bert_backbone import TINY
from tests.test_case import TestCase

# Packed to 64 positions, the toy examples fit in the first bucket, 16.
LENGTH = 64


def _task(cls, preprocessor_class, vocabulary, **kwargs):
    keras.utils.set_random_seed(5)
    backbone = BertBackbone(**{**TINY, "vocabulary_size": len(vocabulary),
                               "max_sequence_length": LENGTH})
    model = cls(backbone, dropout=0.0, preprocessor=preprocessor_class(
        BertTokenizer(vocabulary), sequence_length=LENGTH), **kwargs)
    model.compile(learning_rate=1e-3, num_train_steps=None)
    return model


CASES = {
    "pair classification": lambda: (
        _task(BertClassifier, BertPreprocessor, classify.VOCABULARY,
              num_classes=2),
        (classify.SENTENCES, classify.SENTENCES[::-1]), classify.LABELS),
    "tags": lambda: (
        _task(BertTokenClassifier, BertTokenClassifierPreprocessor,
              tag.VOCABULARY, num_classes=3),
        tag.SENTENCES, tag.TAGS),
}


def _run(case, train, full=False):
    """The first batch's length, the weights after `fit` (when `train`) and
    the scores of `evaluate`, with the task's own `trims_padding` or, when
    `full`, with none."""
    model, x, y = CASES[case]()
    assert model.trims_padding is not None
    with mock.patch.object(type(model), "trims_padding",
                           None if full else model.trims_padding):
        dataset, _ = model._to_repeated_dataset((x, y, None), 4, None, False)
        length = int(next(iter(dataset))[0]["token_ids"].shape[-1])
        if train:
            model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
        scores = model.evaluate(x, y, batch_size=4, verbose=0,
                                return_dict=True)
    return length, [keras.ops.convert_to_numpy(w) for w in model.weights], \
        scores


class PaddingTrimTest(TestCase):
    def assertRunsAsOnFullBatches(self, case, train):
        length, weights, scores = _run(case, train)
        full_length, full_weights, full_scores = _run(case, train, full=True)
        self.assertEqual((length, full_length), (16, LENGTH))
        for a, b in zip(weights, full_weights):
            # Adam's first steps scale a weight's update by its gradient's
            # size, so float noise in a tiny gradient moves it by ~1e-6.
            self.assertAllClose(a, b, atol=2e-5, rtol=1e-4)
        self.assertEqual(scores.keys(), full_scores.keys())
        for name, value in full_scores.items():
            self.assertAllClose(scores[name], value, atol=1e-5)

    @pytest.mark.slow
    def test_per_token_labels_train_as_on_full_batches(self):
        # The tags and their weights are cut with the inputs.
        self.assertRunsAsOnFullBatches("tags", train=True)

    @pytest.mark.slow
    def test_pairs_score_trimmed_batches_as_full_ones(self):
        # The inputs alone are cut (a choice's `(batch, choices, length)`
        # inputs are cut the same way: tests/preprocessing/tasks).
        self.assertRunsAsOnFullBatches("pair classification", train=False)
