import os
import warnings
import zlib

import keras
import numpy as np
import pytest

from keras_bert.models.bert_backbone import BertBackbone
from keras_bert.models.bert_pretrainer import BertPretrainer
from keras_bert.preprocessing import BertTokenizer
from keras_bert.preprocessing import NextSentencePairBuilder
from keras_bert.training.pretraining.pretraining_data import batch_pairs
from keras_bert.training.pretraining.pretraining_data import contiguous_spans
from keras_bert.training.pretraining.pretraining_data import pair_dataset
from keras_bert.training.pretraining.pretraining_data import tokenize_documents
from keras_bert.training.pretraining.text_corpus import TextCorpus
from tests.test_case import TestCase
from tests.training.toy_corpus import toy_vocabulary
from tests.training.toy_corpus import write_lines
from tests.training.toy_corpus import write_toy_corpus

LENGTH = 24
# The default buffer (10,000 pairs) would cycle the toy corpus many times
# before the first batch.
SHUFFLE = 256


def pairs_list(dataset, count):
    return [(a.tolist(), b.tolist(), int(y))
            for a, b, y in dataset.take(count).as_numpy_iterator()]


class PretrainingDataTest(TestCase):
    def setUp(self):
        super().setUp()
        self.tokenizer = BertTokenizer(toy_vocabulary())
        self.corpus = TextCorpus([write_toy_corpus(self.get_temp_dir())])

    def test_batches_are_packed_and_masked(self):
        pairs = pair_dataset(self.corpus, self.tokenizer, LENGTH)
        x, y, weights = next(iter(batch_pairs(
            pairs, self.tokenizer, LENGTH, batch_size=16,
            shuffle_buffer_size=SHUFFLE)))
        x = {k: v.numpy() for k, v in x.items()}
        self.assertEqual(x["token_ids"].shape, (16, LENGTH))
        self.assertEqual(x["mask_positions"].shape, (16, 4))  # ceil(.15*24)
        tok = self.tokenizer
        self.assertTrue(np.all(x["token_ids"][:, 0] == tok.cls_token_id))
        self.assertTrue(np.all(np.sum(x["token_ids"] == tok.sep_token_id, 1) == 2))
        # Segment B exists and follows A; padding is never predicted.
        self.assertTrue(np.all(x["segment_ids"].max(1) == 1))
        real = np.take_along_axis(x["padding_mask"], x["mask_positions"], 1)
        self.assertTrue(np.all(real[weights["mlm_logits"].numpy() > 0] == 1))
        # Every [MASK] in the input is a prediction target.
        masked = np.argwhere(x["token_ids"] == tok.mask_token_id)
        for row, column in masked:
            self.assertIn(column, x["mask_positions"][row])
        self.assertGreater(len(masked), 0)
        labels = y["nsp_logits"].numpy()
        self.assertEqual(set(labels.tolist()), {0, 1})

    def test_mask_token_rate_sets_the_share_shown_as_mask(self):
        def shown_as_mask(rate):
            x, _, weights = next(iter(batch_pairs(
                pair_dataset(self.corpus, self.tokenizer, LENGTH),
                self.tokenizer, LENGTH, batch_size=64,
                mask_token_rate=rate, shuffle_buffer_size=SHUFFLE)))
            shown = np.take_along_axis(x["token_ids"].numpy(),
                                       x["mask_positions"].numpy(), 1)
            predicted = weights["mlm_logits"].numpy() > 0
            return np.mean(shown[predicted] == self.tokenizer.mask_token_id)

        self.assertEqual(shown_as_mask(1.0), 1.0)
        # BERT's 80/10/10 (256 predictions: 0.8 +- 0.025).
        self.assertAllClose(shown_as_mask(0.8), 0.8, atol=0.1)
        self.assertEqual(shown_as_mask(0.0), 0.0)

    def test_stream_is_seeded_and_changes_each_pass(self):
        first = pairs_list(pair_dataset(self.corpus, self.tokenizer, LENGTH,
                                        seed=3), 200)
        again = pairs_list(pair_dataset(self.corpus, self.tokenizer, LENGTH,
                                        seed=3), 200)
        self.assertEqual(first, again)
        one_pass = len(pairs_list(pair_dataset(
            self.corpus, self.tokenizer, LENGTH, repeat=False), 10_000))
        self.assertNotEqual(first[:one_pass], first[one_pass:2 * one_pass])

    def test_chunks_stream_the_builders_pairs_in_order(self):
        # Chunk sizes that split a pass anywhere give the pairs the
        # builder makes from the tokenized documents, pass after pass.
        expected = list(NextSentencePairBuilder(
            LENGTH - 3, seed=zlib.crc32(b"2/0")).build(tokenize_documents(
                self.corpus.documents("train",
                                      shuffle_seed=zlib.crc32(b"2/0")),
                self.tokenizer)))
        for chunk_pairs in (1, 7, 10_000):
            streamed = pairs_list(pair_dataset(
                self.corpus, self.tokenizer, LENGTH, seed=2,
                chunk_pairs=chunk_pairs), len(expected) + 5)
            self.assertEqual(streamed[:len(expected)], expected)
            self.assertEqual(len(streamed), len(expected) + 5)

    def test_skip_resumes_at_the_same_position(self):
        def batches(skip):
            pairs = pair_dataset(self.corpus, self.tokenizer, LENGTH, seed=1)
            ds = batch_pairs(pairs, self.tokenizer, LENGTH, 4,
                             shuffle_buffer_size=32, skip_pairs=skip, seed=1)
            return [b[1]["nsp_logits"].numpy().tolist() +
                    b[0]["segment_ids"].numpy().sum(1).tolist()
                    for b in ds.take(6)]

        self.assertEqual(batches(0)[3:], batches(12)[:3])

    def test_one_sentence_documents_are_never_next(self):
        path = write_lines(os.path.join(self.get_temp_dir(), "single.txt"),
                           ["w1 w2 w3 .", "", "w4 w5 .", "", "w6 w7 w8 w9 ."])
        corpus = TextCorpus([path], "sentences")
        labels = [y for _, _, y in pairs_list(
            pair_dataset(corpus, self.tokenizer, LENGTH), 30)]
        self.assertEqual(labels, [0] * 30)

    def test_masked_lm_only_packs_one_segment(self):
        pairs = pair_dataset(self.corpus, self.tokenizer, LENGTH,
                             next_sentence_prediction=False)
        x, y, _ = next(iter(batch_pairs(pairs, self.tokenizer, LENGTH, 8,
                                        next_sentence_prediction=False,
                                        shuffle_buffer_size=SHUFFLE)))
        self.assertEqual(sorted(y), ["mlm_logits"])
        self.assertEqual(int(x["segment_ids"].numpy().max()), 0)
        # Contiguous spans fill the sequence: [CLS] ... [SEP] at most.
        self.assertTrue(np.all(x["padding_mask"].numpy().sum(1) <= LENGTH))

    def test_contiguous_spans(self):
        self.assertEqual(contiguous_spans([[1, 2], [3], [4, 5, 6, 7, 8]], 3),
                         [[1, 2, 3], [4, 5, 6], [7, 8]])

    def test_fit_on_the_pipeline(self):
        pairs = pair_dataset(self.corpus, self.tokenizer, LENGTH)
        batches = batch_pairs(pairs, self.tokenizer, LENGTH, 8,
                              shuffle_buffer_size=SHUFFLE)
        backbone = BertBackbone(
            vocabulary_size=self.tokenizer.vocabulary_size(), num_layers=1,
            num_heads=2, hidden_dim=16, intermediate_dim=32,
            max_sequence_length=LENGTH)
        model = BertPretrainer(backbone)
        model.compile(total_steps=4, learning_rate=1e-3)
        # No tf.data tuning thread for `fit` to wait on when it ends.
        self.assertFalse(batches.options().autotune.enabled)
        history = model.fit(batches, steps_per_epoch=2, epochs=2, verbose=0)
        for name in ("loss", "mlm_logits_loss", "nsp_logits_loss",
                     "mlm_logits_accuracy", "nsp_logits_accuracy"):
            self.assertTrue(np.all(np.isfinite(history.history[name])), name)
        self.assertEqual(int(model.optimizer.iterations), 4)

    @pytest.mark.slow
    def test_logged_masked_lm_loss_and_accuracy_are_the_batchs(self):
        # The pretrainer's default loss and accuracy (gathered logits, not
        # Keras' one-hot and argmax) score a batch as NumPy does from the
        # model's own outputs, padding positions left out.
        pairs = pair_dataset(self.corpus, self.tokenizer, LENGTH,
                             next_sentence_prediction=False)
        x, y, weights = next(iter(batch_pairs(
            pairs, self.tokenizer, LENGTH, 8, next_sentence_prediction=False,
            shuffle_buffer_size=SHUFFLE)))
        backbone = BertBackbone(
            vocabulary_size=self.tokenizer.vocabulary_size(), num_layers=1,
            num_heads=2, hidden_dim=16, intermediate_dim=32,
            max_sequence_length=LENGTH)
        model = BertPretrainer(backbone, next_sentence_prediction=False)
        model.compile(total_steps=40, learning_rate=1e-2)
        # Part-way to memorizing the batch, so that hits and misses both
        # count.
        model.fit(x, y, sample_weight=weights, epochs=15, verbose=0)
        logits = model.predict(x, verbose=0)["mlm_logits"].astype("float64")
        labels = y["mlm_logits"].numpy()
        weight = weights["mlm_logits"].numpy()
        self.assertLess(weight.sum(), weight.size)  # there is padding
        log_z = np.log(np.exp(logits).sum(-1))
        picked = np.take_along_axis(logits, labels[..., None], -1)[..., 0]
        hits = np.argmax(logits, -1) == labels
        logs = model.evaluate(x, y, sample_weight=weights, verbose=0,
                              return_dict=True)
        self.assertAllClose(logs["loss"],
                            ((log_z - picked) * weight).sum() / weight.sum(),
                            atol=1e-4, rtol=1e-5)
        accuracy = (hits * weight).sum() / weight.sum()
        self.assertAllClose(logs["mlm_logits_accuracy"], accuracy)
        self.assertTrue(0.1 < accuracy < 0.9, accuracy)

    def masked_lm_only_model_and_batches(self):
        pairs = pair_dataset(self.corpus, self.tokenizer, LENGTH,
                             next_sentence_prediction=False)
        batches = batch_pairs(pairs, self.tokenizer, LENGTH, 8,
                              next_sentence_prediction=False,
                              shuffle_buffer_size=SHUFFLE)
        backbone = BertBackbone(
            vocabulary_size=self.tokenizer.vocabulary_size(), num_layers=1,
            num_heads=2, hidden_dim=16, intermediate_dim=32,
            max_sequence_length=LENGTH)
        return BertPretrainer(backbone, next_sentence_prediction=False), batches

    def test_masked_lm_only_fit_keeps_quiet_about_the_unread_pooler(self):
        # TensorFlow warns that the pooler, unread without NSP, has no
        # gradient; BertPretrainer.fit leaves that one warning out, and
        # only while it fits.
        model, batches = self.masked_lm_only_model_and_batches()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.fit(batches, steps_per_epoch=2, epochs=1, verbose=0)
            warnings.warn("Gradients do not exist for variables "
                          "['pooler/kernel', 'pooler/bias'] (after fit)")
        messages = [str(w.message) for w in caught
                    if "Gradients do not exist" in str(w.message)]
        self.assertEqual(len(messages), 1)
        self.assertIn("(after fit)", messages[0])

    def test_masked_lm_only_fit_leaves_the_unread_pooler_as_it_was(self):
        # JAX gives the unread pooler a zero gradient; were it decayed,
        # a classifier pretrained on JAX would start from a smaller one.
        model, batches = self.masked_lm_only_model_and_batches()
        model.compile(total_steps=4, learning_rate=0.1)
        backbone = model.backbone
        pooler = [w.numpy() for w in backbone.pooler.weights]
        embedding = backbone.token_embedding.embeddings.numpy()
        model.fit(batches, steps_per_epoch=2, epochs=1, verbose=0)
        for before, weight in zip(pooler, backbone.pooler.weights):
            np.testing.assert_array_equal(weight.numpy(), before)
        # The step did train: the read weights moved.
        self.assertGreater(np.abs(backbone.token_embedding.embeddings.numpy()
                                  - embedding).max(), 1e-3)
