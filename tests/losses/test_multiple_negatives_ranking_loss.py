import keras
import numpy as np
import pytest

from keras_bert.losses.multiple_negatives_ranking_loss import (
    MultipleNegativesRankingLoss,
)
from tests.test_case import TestCase
from tests.test_case import to_numpy


def reference(groups, scale, cosine=True):
    """In-batch softmax cross-entropy, written out in NumPy."""
    groups = groups.astype("float64")
    if cosine:
        groups = groups / np.linalg.norm(groups, axis=-1, keepdims=True)
    anchors = groups[:, 0]
    candidates = np.concatenate([groups[:, c] for c in
                                 range(1, groups.shape[1])])
    logits = scale * anchors @ candidates.T
    logits -= logits.max(1, keepdims=True)
    log_probs = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    return -np.mean(log_probs[np.arange(len(groups)), np.arange(len(groups))])


class MultipleNegativesRankingLossTest(TestCase):
    def setUp(self):
        super().setUp()
        self.groups = np.random.default_rng(0).normal(
            size=(4, 3, 8)).astype("float32")

    def test_matches_numpy_with_pairs_and_hard_negatives(self):
        labels = np.arange(4)
        for columns in (2, 3):
            for similarity, scale in (("cosine", 20.0), ("dot", 1.0)):
                loss = MultipleNegativesRankingLoss(scale=scale,
                                                    similarity=similarity)
                value = float(to_numpy(loss(labels,
                                            self.groups[:, :columns])))
                self.assertAllClose(
                    value, reference(self.groups[:, :columns], scale,
                                     similarity == "cosine"),
                    atol=1e-4, rtol=1e-5)

    def test_matches_sentence_transformers(self):
        torch = pytest.importorskip("torch")
        st_losses = pytest.importorskip(
            "sentence_transformers.sentence_transformer.losses")
        st_loss = st_losses.MultipleNegativesRankingLoss(None, scale=20.0)
        expected = st_loss.compute_loss_from_embeddings(
            [torch.from_numpy(self.groups[:, c]) for c in range(3)], None)
        value = MultipleNegativesRankingLoss()(np.arange(4), self.groups)
        self.assertAllClose(float(to_numpy(value)), float(expected),
                            atol=1e-5, rtol=1e-5)

    def test_serialization(self):
        loss = MultipleNegativesRankingLoss(scale=10.0, similarity="dot")
        revived = keras.losses.deserialize(keras.losses.serialize(loss))
        self.assertEqual((revived.scale, revived.similarity), (10.0, "dot"))

    def test_bad_arguments_and_shapes(self):
        with self.assertRaisesRegex(ValueError, "scale must be > 0"):
            MultipleNegativesRankingLoss(scale=0)
        with self.assertRaisesRegex(ValueError, "similarity"):
            MultipleNegativesRankingLoss(similarity="l2")
        with self.assertRaisesRegex(ValueError, r"\(batch, columns >= 2"):
            MultipleNegativesRankingLoss()(np.arange(4), self.groups[:, 0])
