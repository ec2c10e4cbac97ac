"""The fill-mask examples a pretraining run prints: where the answer ranks.

A tiny untrained model is enough: the ranks are checked against the
model's own whole distribution and against the counts given, not against
a quality level.
"""

import os
import random

import keras
import numpy as np

from keras_bert import BertBackbone
from keras_bert import BertPretrainer
from keras_bert.preprocessing import BertTokenizer
from keras_bert.training.fill_mask import batch_mask_probabilities
from keras_bert.training.fill_mask import fill_mask
from keras_bert.training.fill_mask import mask_probabilities
from keras_bert.training.pretraining.pretraining_evaluation import (
    fill_mask_examples,
)
from keras_bert.training.pretraining.pretraining_evaluation import (
    fill_mask_summary,
)
from keras_bert.training.pretraining.pretraining_report import (
    heldout_evaluation,
)
from keras_bert.training.pretraining.text_corpus import TextCorpus
from tests.test_case import TestCase
from tests.training.toy_corpus import SPECIAL_TOKENS
from tests.training.toy_corpus import write_lines

WORDS = ["the", "cat", "sat", "on", "mat", "and", "dog", "ran", "far", "away",
         "."]
DOCUMENTS = [["the cat sat on the mat and the dog ran far away ."],
             ["the dog sat on the mat and the cat ran far away ."]]


class FillMaskExamplesTest(TestCase):
    def setUp(self):
        super().setUp()
        self.tokenizer = BertTokenizer(SPECIAL_TOKENS + WORDS)
        self.model = BertPretrainer(BertBackbone(
            vocabulary_size=self.tokenizer.vocabulary_size(), num_layers=1,
            num_heads=2, hidden_dim=16, intermediate_dim=32,
            max_sequence_length=32))

    def test_answer_is_ranked_in_the_whole_vocabulary_and_by_frequency(self):
        size = self.tokenizer.vocabulary_size()
        counts = np.arange(size)[::-1] * 10  # id 0 the most frequent
        examples = fill_mask_examples(self.model, self.tokenizer, DOCUMENTS,
                                      count=2, counts=counts)
        self.assertEqual(len(examples), 2)
        for example in examples:
            row = mask_probabilities(self.model, self.tokenizer,
                                     example["text"])[0]
            answer_id = self.tokenizer.token_to_id(example["answer"])
            order = list(np.argsort(-row))
            self.assertEqual(example["model_rank"],
                             order.index(answer_id) + 1)
            self.assertEqual(example["correct"], order[0] == answer_id)
            self.assertEqual(example["frequency_rank"], answer_id + 1)
            # The printed top five are the head of the same distribution.
            # (batched with the other example: equal to rounding)
            top = fill_mask(self.model, self.tokenizer, example["text"])[0]
            self.assertEqual([t for t, _ in example["predictions"]],
                             [t for t, _ in top])
            self.assertAllClose([p for _, p in example["predictions"]],
                                [p for _, p in top], atol=1e-6)
            in_top = example["model_rank"] <= 5
            self.assertEqual(example["rank"] is not None, in_top)
            if in_top:
                self.assertEqual(example["rank"], example["model_rank"])

    def test_without_counts_there_is_no_frequency_rank(self):
        example = fill_mask_examples(self.model, self.tokenizer, DOCUMENTS,
                                     count=1)[0]
        self.assertNotIn("frequency_rank", example)
        self.assertGreaterEqual(example["model_rank"], 1)

    def test_probabilities_are_the_models_softmax_at_the_masks(self):
        # Packed by hand ([CLS] the [MASK] sat [MASK] . [SEP]) and run as a
        # Keras call: whichever path fill-mask takes on this backend
        # (predict_on_batch or an eager call) gives the model's own output.
        ids = [self.tokenizer.token_to_id(token) for token in
               ["[CLS]", "the", "[MASK]", "sat", "[MASK]", ".", "[SEP]"]]
        logits = self.model({
            "token_ids": np.array([ids], "int32"),
            "segment_ids": np.zeros((1, len(ids)), "int32"),
            "padding_mask": np.ones((1, len(ids)), "int32"),
            "mask_positions": np.array([[2, 4]], "int32"),
        }, training=False)["mlm_logits"]
        logits = keras.ops.convert_to_numpy(logits).astype("float64")[0]
        expected = np.exp(logits - logits.max(-1, keepdims=True))
        expected /= expected.sum(-1, keepdims=True)
        self.assertAllClose(
            mask_probabilities(self.model, self.tokenizer,
                               "the [MASK] sat [MASK] ."),
            expected, atol=1e-6)

    def test_batched_rows_equal_each_text_alone(self):
        # Texts of different lengths share a padded batch; one has two
        # masks and one starts with its mask.
        texts = ["the [MASK] sat .", "[MASK] dog ran far away on the mat .",
                 "the cat [MASK] on the [MASK] and ran ."]
        for batch_size in (1, 2, 3):
            rows = batch_mask_probabilities(self.model, self.tokenizer,
                                            texts, batch_size=batch_size)
            self.assertEqual([len(row) for row in rows], [1, 1, 2])
            for text, row in zip(texts, rows):
                self.assertAllClose(
                    row, mask_probabilities(self.model, self.tokenizer, text),
                    atol=1e-6)
        self.assertEqual(
            batch_mask_probabilities(self.model, self.tokenizer, []), [])
        with self.assertRaisesRegex(ValueError, "no \\[MASK\\] token to "
                                    "fill: 'the cat sat'"):
            batch_mask_probabilities(self.model, self.tokenizer,
                                     ["the [MASK] .", "the cat sat"])

    def test_summary_counts_the_examples_ranks(self):
        size = self.tokenizer.vocabulary_size()
        counts = np.arange(size)[::-1] * 10
        examples = fill_mask_examples(self.model, self.tokenizer,
                                      DOCUMENTS * 3, count=6, counts=counts)
        summary = fill_mask_summary(examples)
        model = [example["model_rank"] for example in examples]
        frequency = [example["frequency_rank"] for example in examples]
        self.assertEqual(summary["examples"], 6)
        self.assertEqual(summary["model_top5"],
                         sum(rank <= 5 for rank in model) / 6)
        self.assertEqual(summary["frequency_top5"],
                         sum(rank <= 5 for rank in frequency) / 6)
        self.assertEqual(summary["above_frequency"],
                         sum(m < f for m, f in zip(model, frequency)) / 6)
        self.assertEqual(summary["median_model_rank"], np.median(model))

    def test_a_run_prints_five_and_summarizes_more(self):
        rng = random.Random(0)
        lines = []
        for _ in range(60):
            lines += [" ".join(rng.sample(WORDS[:-1], 10)) + " .", ""]
        path = write_lines(os.path.join(self.get_temp_dir(), "c.txt"), lines)
        corpus = TextCorpus([path], "sentences", heldout_fraction=0.5)
        results = heldout_evaluation(
            self.model, corpus, self.tokenizer, sequence_length=32,
            batch_size=4, next_sentence_prediction=False, seed=0,
            fill_mask_sentences=12)
        summary = results["fill_mask_summary"]
        self.assertEqual(summary["examples"], 12)
        printed = results["fill_mask_examples"]
        self.assertEqual(len(printed), 5)
        # The printed five are the first of the sentences summarized.
        counts = np.zeros(self.tokenizer.vocabulary_size())
        all_twelve = fill_mask_examples(self.model, self.tokenizer,
                                        corpus.documents("heldout"),
                                        count=12, counts=counts)
        self.assertEqual([e["text"] for e in printed],
                         [e["text"] for e in all_twelve[:5]])
        self.assertEqual(summary["median_model_rank"],
                         fill_mask_summary(all_twelve)["median_model_rank"])
