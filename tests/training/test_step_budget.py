import json
import os
import time
from unittest import mock

import numpy as np
from keras import ops

from keras_bert.training.pretraining.pretraining_job import PretrainingJob
from keras_bert.training.pretraining.step_budget import StepBudget
from tests.test_case import TestCase
from tests.training.toy_corpus import write_toy_corpus
from tests.training.toy_corpus import write_toy_vocabulary

SMALL_MODEL = {"num_layers": 1, "num_heads": 2, "hidden_dim": 16,
               "intermediate_dim": 32}


class StepBudgetTest(TestCase):
    def test_spends_what_is_left_after_the_reserve(self):
        started = time.perf_counter() - 20  # 20 s of set-up already spent
        budget = StepBudget(100, started, reserve_seconds=10,
                            reserve_fraction=0.1)
        # 100 - 20 - (10 + 10) = 60 s left, at 2 steps/s.
        self.assertAlmostEqual(budget.remaining(), 60, delta=1)
        self.assertIn(budget.steps(rate=2.0), range(118, 121))
        spent = StepBudget(30, started)
        with self.assertRaisesRegex(ValueError, "spent before training"):
            spent.steps(rate=2.0)


class BudgetRunTest(TestCase):
    def setUp(self):
        super().setUp()
        self.root = self.get_temp_dir()
        self.corpus = write_toy_corpus(self.root, num_documents=30)
        self.vocabulary = write_toy_vocabulary(self.root)

    def job(self, name, **settings):
        return PretrainingJob(
            os.path.join(self.root, name), corpus_files=[self.corpus],
            vocabulary=self.vocabulary, config=SMALL_MODEL, batch_size=8,
            sequence_length=24, heldout_fraction=0.3, log_every=2,
            print_fn=None, **settings)

    def test_a_budget_run_is_the_run_of_its_measured_steps(self):
        measure = StepBudget.measure_step_rate
        timed_with = []

        def measure_and_keep(budget, model, batches):
            rate = measure(budget, model, batches)
            timed_with.append(model.train_function)
            return rate

        with mock.patch.object(StepBudget, "steps", return_value=6), \
                mock.patch.object(StepBudget, "measure_step_rate",
                                  measure_and_keep):
            budget = self.job("budget", steps=None, minutes=5)
            budget.prepare()
            self.assertIsNone(budget.steps)
            budget.train()
        self.assertEqual(budget.steps, 6)
        # The run trained with the step compiled for the timing.
        self.assertIs(budget.model.train_function, timed_with[0])
        with open(os.path.join(self.root, "budget", "run.json")) as file:
            self.assertEqual(json.load(file)["steps"], 6)
        fixed = self.job("fixed", steps=6)
        fixed.prepare()
        fixed.train()
        # The timed steps were undone: both runs trained 6 steps from the
        # same initial weights, with the same schedule.
        self.assertEqual(int(budget.model.optimizer.iterations), 6)
        for a, b in zip(budget.model.weights, fixed.model.weights):
            np.testing.assert_allclose(ops.convert_to_numpy(a),
                                       ops.convert_to_numpy(b), atol=1e-6)

    def test_a_resumed_budget_run_keeps_its_steps(self):
        with mock.patch.object(StepBudget, "steps", return_value=4):
            first = self.job("run", steps=None, minutes=5)
            first.prepare()
            first.train()
        with mock.patch.object(StepBudget, "measure_step_rate") as timing:
            again = self.job("run", steps=None, minutes=5, resume=True)
            again.prepare()
            again.train()
        timing.assert_not_called()
        self.assertEqual(again.steps, 4)
        self.assertEqual(again.start_step, 4)
