"""`EpochScores`, the callback that picks `keras-bert finetune`'s best
epoch."""

import json
import os

from keras_bert.commands.epoch_scores import EpochScores
from tests.test_case import TestCase


class EpochScoresTest(TestCase):
    def run_epochs(self, accuracies, validation_losses):
        saved = []
        scores = iter(accuracies)
        callback = EpochScores(lambda: {"accuracy": next(scores)},
                               "accuracy", saved.append,
                               self.get_temp_dir())
        for epoch, loss in enumerate(validation_losses):
            callback.on_epoch_end(epoch, {"loss": 0.5, "val_loss": loss})
        return callback, [row["epoch"] for row in saved]

    def test_a_higher_score_wins_whatever_the_loss(self):
        callback, saved = self.run_epochs([70.0, 80.0, 75.0],
                                          [0.6, 0.7, 0.3])
        self.assertEqual(callback.best["epoch"], 2)
        self.assertEqual(saved, [1, 2])

    def test_a_tie_goes_to_the_lower_validation_loss(self):
        # A small validation set: the majority label every epoch while the
        # loss falls; the last epoch is the best model.
        callback, saved = self.run_epochs([79.7, 79.7, 79.7],
                                          [0.63, 0.52, 0.39])
        self.assertEqual(callback.best["epoch"], 3)
        self.assertEqual(saved, [1, 2, 3])
        callback, saved = self.run_epochs([79.7, 79.7], [0.4, 0.5])
        self.assertEqual(saved, [1])

    def test_metrics_files_hold_every_epoch(self):
        callback, _ = self.run_epochs([1.0, 2.0], [0.5, 0.4])
        with open(os.path.join(callback.output_dir, "metrics.jsonl")) as f:
            rows = [json.loads(line) for line in f]
        self.assertEqual([row["val_accuracy"] for row in rows], [1.0, 2.0])
