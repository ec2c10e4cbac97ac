"""A torn training checkpoint is skipped, with the reason, and --resume
continues from the newest intact one (issue 52, case 4)."""

import os

from keras_bert.training.pretraining.checkpoint_manifest import MANIFEST_FILE
from keras_bert.training.pretraining.pretraining_checkpoint import (
    PretrainingCheckpoint)
from keras_bert.training.pretraining.pretraining_job import PretrainingJob
from tests.commands.cli_helpers import run_cli
from tests.test_case import TestCase
from tests.training.toy_corpus import write_toy_corpus
from tests.training.toy_corpus import write_toy_vocabulary

SMALL_MODEL = {"num_layers": 1, "num_heads": 2, "hidden_dim": 16,
               "intermediate_dim": 32, "dropout": 0.0}


def truncate(path, keep=0.5):
    with open(path, "r+b") as file:
        file.truncate(int(os.path.getsize(path) * keep))


class TornCheckpointTest(TestCase):
    def setUp(self):
        super().setUp()
        root = self.get_temp_dir()
        self.job = PretrainingJob(
            os.path.join(root, "run"), corpus_files=[write_toy_corpus(root)],
            vocabulary=write_toy_vocabulary(root), config=SMALL_MODEL,
            steps=2, batch_size=8, sequence_length=24, heldout_fraction=0.3,
            print_fn=None)
        self.job.prepare()
        self.job.model.optimizer.build(self.job.model.trainable_variables)
        self.directory = os.path.join(root, "run", "checkpoints")
        callback = PretrainingCheckpoint(self.directory, save_every=2)
        callback.set_model(self.job.model)
        callback.save(2)
        callback.save(4)
        self.newest = os.path.join(self.directory, "ckpt-00000004")

    def test_each_checkpoint_has_a_manifest(self):
        self.assertEqual(sorted(os.listdir(self.newest)), [
            MANIFEST_FILE, "model.weights.h5", "optimizer.npz",
            "state.json"])
        self.assertEqual(PretrainingCheckpoint.latest(self.directory),
                         self.newest)

    def test_a_torn_newest_checkpoint_is_skipped_with_its_reason(self):
        for name, reason in [
            ("model.weights.h5", "model.weights.h5 has [\\d,]+ bytes, the "
             "manifest says [\\d,]+"),
            ("optimizer.npz", "optimizer.npz has [\\d,]+ bytes"),
        ]:
            truncate(os.path.join(self.newest, name))
            skipped = []
            state = PretrainingCheckpoint.restore(self.job.model,
                                                  self.directory, skipped)
            self.assertEqual(state["step"], 2)
            self.assertEqual(len(skipped), 1)
            self.assertEqual(skipped[0][0], self.newest)
            self.assertRegex(skipped[0][1], reason)
            # The next save of step 4 replaces the torn folder.
            callback = PretrainingCheckpoint(self.directory, save_every=2)
            callback.set_model(self.job.model)
            callback.save(4)
            self.assertEqual(PretrainingCheckpoint.latest(self.directory),
                             self.newest)

    def test_same_size_corruption_and_missing_files(self):
        path = os.path.join(self.newest, "model.weights.h5")
        with open(path, "r+b") as file:
            file.seek(os.path.getsize(path) - 8)
            file.write(b"\xff" * 8)
        skipped = []
        PretrainingCheckpoint.latest(self.directory, skipped)
        self.assertIn("does not match its SHA-256", skipped[0][1])
        os.remove(os.path.join(self.directory, "ckpt-00000002",
                               "state.json"))
        skipped = []
        self.assertIsNone(PretrainingCheckpoint.latest(self.directory,
                                                       skipped))
        self.assertEqual(skipped[1][1], "state.json missing")

    def test_a_checkpoint_written_before_manifests_must_open(self):
        os.remove(os.path.join(self.newest, MANIFEST_FILE))
        self.assertEqual(PretrainingCheckpoint.latest(self.directory),
                         self.newest)
        truncate(os.path.join(self.newest, "optimizer.npz"))
        skipped = []
        self.assertNotEqual(PretrainingCheckpoint.latest(
            self.directory, skipped), self.newest)
        self.assertRegex(skipped[0][1], "optimizer.npz cannot be read")


class ResumeCommandTest(TestCase):
    def test_resume_survives_a_torn_latest_checkpoint(self):
        root = self.get_temp_dir()
        output = os.path.join(root, "run")
        args = ["pretrain", "--corpus", write_toy_corpus(root), "--vocab",
                write_toy_vocabulary(root), "--config",
                '{"num_layers": 1, "num_heads": 2, "hidden_dim": 16, '
                '"intermediate_dim": 32}', "--steps", "4", "--batch-size",
                "8", "--sequence-length", "24", "--heldout-fraction", "0.3",
                "--log-every", "2", "--checkpoint-every", "2", "--output",
                output]
        self.assertEqual(run_cli(*args)[0], 0)
        newest = os.path.join(output, "checkpoints", "ckpt-00000004")
        truncate(os.path.join(newest, "model.weights.h5"))
        code, printed = run_cli(*args, "--resume")
        self.assertEqual(code, 0)
        self.assertRegex(printed, f"Skipping the torn checkpoint {newest}: "
                         "model.weights.h5 has [\\d,]+ bytes, the manifest "
                         "says [\\d,]+.")
        self.assertIn("Resuming at step 2 from "
                      + os.path.join(output, "checkpoints", "ckpt-00000002"),
                      printed)
        # Step 4 was trained again and saved whole.
        self.assertEqual(PretrainingCheckpoint.latest(
            os.path.join(output, "checkpoints")), newest)
