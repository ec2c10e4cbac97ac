import json
import os
import time
from unittest import mock

import numpy as np
import pytest
from keras import ops

from keras_bert.optimizers.bert_optimizer import resize_schedule
from keras_bert.commands.pretrain import format_shortfall
from keras_bert.training.pretraining.budget_replan import BudgetReplan
from keras_bert.training.pretraining.pretraining_checkpoint import (
    PretrainingCheckpoint,
)
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


class BudgetReplanTest(TestCase):
    def run_epochs(self, replan, seconds_per_step, epochs, left):
        """Drives `replan` through `epochs` logged intervals on a fake
        clock; `left(now)` is what the budget has left at `now`."""
        replan.set_model(mock.Mock(stop_training=False))
        replan.budget = mock.Mock(remaining=lambda: left(self.now))
        self.now = 0.0
        ran = 0
        with mock.patch("time.perf_counter", lambda: self.now):
            for epoch in range(epochs):
                self.now += replan.log_every * seconds_per_step
                ran += replan.log_every
                replan.on_epoch_end(epoch)
                if replan.model.stop_training:
                    break
        return ran

    def test_a_run_faster_than_timed_takes_more_steps(self):
        plans = []
        # Planned 100 steps at 1 step/s for a 100 s budget; trains at 2/s.
        replan = BudgetReplan(None, steps=100, log_every=10, max_steps=200,
                              on_replan=lambda steps, rate: plans.append(
                                  (steps, rate)))
        self.assertEqual(replan.replan_epochs, [2, 4])
        ran = self.run_epochs(replan, 0.5, 20, lambda now: 100 - now)
        # At 30 steps (15 s): 85 s left at 2 steps/s -> 170 more, capped.
        self.assertEqual(plans, [(200, 2.0)])
        self.assertEqual(ran, 200)

    def test_a_run_slower_than_timed_stops_on_time(self):
        plans = []
        replan = BudgetReplan(None, steps=100, log_every=10, max_steps=200,
                              on_replan=lambda steps, rate: plans.append(
                                  steps))
        ran = self.run_epochs(replan, 2.0, 20, lambda now: 100 - now)
        # 30 steps at 60 s: 40 s left -> 20 more; then 50 steps at 100 s:
        # nothing left.
        self.assertEqual(plans, [50])
        self.assertEqual(ran, 50)

    def test_an_unchanged_plan_stops_at_its_steps(self):
        plans = []
        replan = BudgetReplan(None, steps=40, log_every=10, max_steps=80,
                              on_replan=lambda *args: plans.append(args))
        ran = self.run_epochs(replan, 1.0, 8, lambda now: 40 - now)
        self.assertEqual(plans, [])
        self.assertEqual(ran, 40)


class BudgetRunTest(TestCase):
    def setUp(self):
        super().setUp()
        self.root = self.get_temp_dir()
        self.corpus = write_toy_corpus(self.root, num_documents=30)
        self.vocabulary = write_toy_vocabulary(self.root)

    def job(self, name, **settings):
        settings = {"log_every": 2, **settings}
        return PretrainingJob(
            os.path.join(self.root, name), corpus_files=[self.corpus],
            vocabulary=self.vocabulary, config=SMALL_MODEL, batch_size=8,
            sequence_length=24, heldout_fraction=0.3, print_fn=None,
            **settings)

    @pytest.mark.slow
    def test_a_budget_run_is_the_run_of_its_measured_steps(self):
        measure = StepBudget.measure_step_rate
        timed_with = []

        def measure_and_keep(budget, model, batches):
            rate = measure(budget, model, batches)
            timed_with.append(model.train_function)
            return rate

        # Planning again would change the run's length; `fit` still stops
        # at the measured steps though it is given room for twice as many.
        with mock.patch.object(StepBudget, "steps", return_value=6), \
                mock.patch.object(StepBudget, "measure_step_rate",
                                  measure_and_keep), \
                mock.patch.object(BudgetReplan, "_replan"):
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

    def test_a_budget_run_plans_again_from_its_own_steps(self):
        # Timed at far below its speed: 8 steps planned, 2 s left at the
        # first re-plan, which fills them (up to twice the plan).
        with mock.patch.object(StepBudget, "steps", return_value=8), \
                mock.patch.object(StepBudget, "remaining", return_value=2.0):
            job = self.job("replan", steps=None, minutes=5)
            job.prepare()
            job.train()
        self.assertEqual(job.steps, 16)
        self.assertEqual(int(job.model.optimizer.iterations), 16)
        self.assertEqual(job.model.optimizer._learning_rate.total_steps, 16)
        self.assertEqual(job._logger.total_steps, 16)
        with open(os.path.join(self.root, "replan", "run.json")) as file:
            record = json.load(file)
        self.assertEqual((record["steps"], record["log_every_steps"]),
                         (16, 2))
        # Resumed, it keeps the new length and the first plan's intervals,
        # and its schedule spans them even from a checkpoint written before
        # the re-plan (here: one whose schedule still spans 8 steps).
        load = PretrainingCheckpoint.load

        def load_older(model, path):
            state = load(model, path)
            resize_schedule(model.optimizer, 8, 1)
            return state

        again = self.job("replan", steps=None, minutes=5, resume=True)
        again.prepare()
        self.assertEqual((again.steps, again.log_every), (16, 2))
        with mock.patch.object(PretrainingCheckpoint, "load", load_older):
            again.train()
        self.assertEqual(again.model.optimizer._learning_rate.total_steps, 16)

    def test_a_run_cut_short_by_a_busy_machine_says_so(self):
        # Timed at 16 steps; at the first re-plan no time is left, so the
        # run stops at the steps it has done.
        with mock.patch.object(StepBudget, "steps", return_value=16), \
                mock.patch.object(StepBudget, "remaining", return_value=0.0):
            job = self.job("busy", steps=None, minutes=5)
            job.prepare()
            job.train()
            results = job.evaluate(max_batches=2)
        shortfall = results["budget_shortfall"]
        self.assertEqual(shortfall["planned_steps"], 16)
        self.assertEqual(shortfall["trained_steps"], job.steps)
        self.assertLess(job.steps, 16)
        line = format_shortfall(shortfall)
        self.assertIn("planned 16 steps", line)
        self.assertIn(f"trained {job.steps}", line)
        with open(os.path.join(self.root, "busy", "evaluation.json")) as file:
            self.assertEqual(json.load(file)["budget_shortfall"], shortfall)
        # A run that trained what it planned says nothing.
        with mock.patch.object(StepBudget, "steps", return_value=4):
            idle = self.job("idle", steps=None, minutes=5)
            idle.prepare()
            idle.train()
        self.assertIsNone(idle.budget_shortfall())

    def test_a_resumed_run_takes_its_plan_from_run_json(self):
        with mock.patch.object(StepBudget, "steps", return_value=4):
            first = self.job("plan", steps=None, minutes=5, log_every=None)
            first.prepare()
            first.train()
        path = os.path.join(self.root, "plan", "run.json")
        with open(path) as file:
            record = json.load(file)
        # As a re-plan can leave it: 62 steps in intervals of 2, where
        # `step_plan` alone would pick intervals of 3 and round to 63.
        record.update(steps=62, log_every_steps=2, checkpoint_every_steps=10)
        with open(path, "w") as file:
            json.dump(record, file)
        again = self.job("plan", steps=None, minutes=5, log_every=None,
                         resume=True)
        again.prepare()
        self.assertEqual(
            (again.steps, again.log_every, again.checkpoint_every),
            (62, 2, 10))

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
