"""The fill-mask examples a pretraining run prints: where the answer ranks.

A tiny untrained model is enough: the ranks are checked against the
model's own whole distribution and against the counts given, not against
a quality level.
"""

import numpy as np

from keras_bert import BertBackbone
from keras_bert import BertPretrainer
from keras_bert.preprocessing import BertTokenizer
from keras_bert.training.fill_mask import fill_mask
from keras_bert.training.fill_mask import mask_probabilities
from keras_bert.training.pretraining.pretraining_evaluation import (
    fill_mask_examples,
)
from tests.test_case import TestCase
from tests.training.toy_corpus import SPECIAL_TOKENS

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
            top = fill_mask(self.model, self.tokenizer, example["text"])[0]
            self.assertEqual(example["predictions"], top)
            in_top = example["model_rank"] <= 5
            self.assertEqual(example["rank"] is not None, in_top)
            if in_top:
                self.assertEqual(example["rank"], example["model_rank"])

    def test_without_counts_there_is_no_frequency_rank(self):
        example = fill_mask_examples(self.model, self.tokenizer, DOCUMENTS,
                                     count=1)[0]
        self.assertNotIn("frequency_rank", example)
        self.assertGreaterEqual(example["model_rank"], 1)
