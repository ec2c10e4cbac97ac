"""BertPretrainer without next-sentence prediction leaves the pooler be."""

import warnings

import keras
import numpy as np

from keras_bert.models.bert_backbone import BertBackbone
from keras_bert.models.bert_classifier import BertClassifier
from keras_bert.models.bert_pretrainer import BertPretrainer
from tests.test_case import TestCase


class BertPretrainerTest(TestCase):
    def test_masked_lm_only_does_not_train_the_pooler(self):
        backbone = BertBackbone(vocabulary_size=50, num_layers=1,
                                num_heads=2, hidden_dim=8,
                                intermediate_dim=16, max_sequence_length=16)
        pretrainer = BertPretrainer(backbone, next_sentence_prediction=False)
        # The default schedule starts its warmup at a rate of 0.
        pretrainer.compile(optimizer=keras.optimizers.SGD(1.0))
        pooler = backbone.get_layer("pooler").kernel
        x = {"token_ids": np.ones((2, 8), "int32"),
             "segment_ids": np.zeros((2, 8), "int32"),
             "padding_mask": np.ones((2, 8), "int32"),
             "mask_positions": np.array([[1, 2], [3, 4]], "int32")}
        y = {"mlm_logits": np.array([[5, 6], [7, 8]])}
        weights = {"mlm_logits": np.ones((2, 2), "float32")}
        before = [keras.ops.convert_to_numpy(w) for w in (
            pooler, backbone.token_embedding.embeddings)]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            pretrainer.train_on_batch(x, y, weights)
        self.assertEqual([str(w.message) for w in caught
                          if "Gradients do not exist" in str(w.message)], [])
        self.assertAllClose(pooler, before[0])
        self.assertFalse(np.allclose(keras.ops.convert_to_numpy(
            backbone.token_embedding.embeddings), before[1]))
        self.assertFalse(any(w is pooler
                             for w in pretrainer.trainable_weights))
        self.assertEqual(len(pretrainer.weights),
                         len(pretrainer.trainable_weights)
                         + len(pretrainer.non_trainable_weights))
        # The backbone itself is untouched: a classifier trains its pooler.
        classifier = BertClassifier(backbone, num_classes=2)
        self.assertTrue(any(w is pooler
                            for w in classifier.trainable_weights))
