import csv
import json
import os
from unittest import mock

import numpy as np
import pytest
from keras import ops

from keras_bert.commands.pretrain import format_fill_mask
from keras_bert.models.bert_pretrainer import BertPretrainer
from keras_bert.training.pretraining.pretraining_checkpoint import PretrainingCheckpoint
from keras_bert.training.pretraining.pretraining_job import PretrainingJob
from tests.commands.cli_helpers import cli_error
from tests.commands.cli_helpers import run_cli
from tests.test_case import TestCase
from tests.training.toy_corpus import write_lines
from tests.training.toy_corpus import write_toy_corpus
from tests.training.toy_corpus import write_toy_vocabulary

SMALL_MODEL = {"num_layers": 1, "num_heads": 2, "hidden_dim": 16,
               "intermediate_dim": 32, "dropout": 0.0}


def logged_steps(directory):
    with open(os.path.join(directory, "metrics.csv")) as file:
        return [int(row["step"]) for row in csv.DictReader(file)]


class Interrupted(Exception):
    pass


class PretrainCommandTest(TestCase):
    def setUp(self):
        super().setUp()
        self.root = self.get_temp_dir()
        self.corpus = write_toy_corpus(self.root, num_documents=40)
        self.vocabulary = write_toy_vocabulary(self.root)

    def pretrain_args(self, output, *extra, corpus=True):
        # Next-sentence prediction on: the full path (the budget recipe
        # trains masked LM only).
        args = ["pretrain", "--nsp", "--config", "tiny", "--steps", "4",
                "--batch-size", "8", "--sequence-length", "24",
                "--heldout-fraction", "0.3", "--log-every", "2",
                "--checkpoint-every", "2", "--output", output]
        if corpus:
            args += ["--corpus", self.corpus, "--vocab", self.vocabulary]
        return [*args, *extra]

    def pretrain(self, output, *extra, corpus=True):
        return run_cli(*self.pretrain_args(output, *extra, corpus=corpus))

    @pytest.mark.slow
    def test_masked_lm_only_run_logs_its_curves(self):
        # The budget recipe's objective: one output, whose loss Keras logs
        # as `loss` alone; the logs, the plot and the evaluation say MLM.
        output = os.path.join(self.root, "mlm_only")
        # TensorFlow's warning about the unread pooler is not shown.
        with self.assertNoWarningAbout("Gradients do not exist"):
            code, printed = self.pretrain(output, "--no-nsp",
                                          "--mask-token-rate", "1")
        self.assertEqual(code, 0)
        self.assertIn("30% masked (100/0/0)", printed)
        # A new model starts at the budget recipe's scale, and says so.
        self.assertIn("peak lr 0.002, init stddev 0.05, dropout 0", printed)
        self.assertIn("masked-token accuracy", printed)
        self.assertNotIn("next-sentence accuracy", printed)
        self.assertRegex(printed, r"step 4/4 \| loss [\d.]+ \| mlm [\d.]+ "
                                  r"acc [\d.]+ \|")
        with open(os.path.join(output, "metrics.jsonl")) as file:
            rows = [json.loads(line) for line in file]
        for row in rows:
            self.assertEqual(row["mlm_loss"], row["loss"])
            self.assertTrue(0 <= row["mlm_accuracy"] <= 1)
            self.assertNotIn("nsp_loss", row)
        with open(os.path.join(output, "evaluation.json")) as file:
            self.assertNotIn("nsp_accuracy", json.load(file))

    @pytest.mark.slow
    def test_run_writes_logs_checkpoints_preset_and_reusable_shards(self):
        # Offline mode: this run writes the pairs once and trains from
        # them; the second run below reads only the shards.
        output = os.path.join(self.root, "run")
        shards = os.path.join(self.root, "shards")
        code, printed = self.pretrain(output, "--write-shards", shards)
        self.assertEqual(code, 0)
        for text in ("masked-token accuracy", "next-sentence accuracy",
                     "50.0%", "most frequent token", "Fill-mask on held-out"):
            self.assertIn(text, printed)
        self.assertRegex(printed, r"Wrote [\d,]+ pairs in 1 shard\(s\)")
        self.assertEqual(logged_steps(output), [2, 4])
        with open(os.path.join(output, "metrics.jsonl")) as file:
            rows = [json.loads(line) for line in file]
        self.assertTrue(all(np.isfinite(row["mlm_loss"]) for row in rows))
        self.assertTrue(any(name.startswith("events.out.tfevents") for name
                            in os.listdir(os.path.join(output, "tensorboard"))))
        self.assertTrue(os.path.getsize(os.path.join(output, "loss_curves.png")))
        with open(os.path.join(output, "evaluation.json")) as file:
            evaluation = json.load(file)
        self.assertGreater(evaluation["masked_tokens"], 0)
        self.assertIn("nsp_accuracy", evaluation)
        self.assertEqual(os.path.basename(PretrainingCheckpoint.latest(
            os.path.join(output, "checkpoints"))), "ckpt-00000004")
        model = BertPretrainer.from_preset(os.path.join(output, "model"))
        self.assertEqual(model.backbone.vocabulary_size, 31)
        with open(os.path.join(output, "vocab.txt")) as file:
            self.assertEqual(len(file.read().split()), 31)
        with open(os.path.join(shards, "shards.json")) as file:
            manifest = json.load(file)
        self.assertEqual(manifest["metadata"]["corpus_files"], [self.corpus])

        self.assertIn("already holds a pretraining run. Pass --resume",
                      cli_error(*self.pretrain_args(output)))
        self.assertIn("global_batch_size: 8 then, 4 now", cli_error(
            *self.pretrain_args(output, "--resume", "--batch-size", "4")))
        # Resuming a finished run trains no step and rewrites no shard.
        code, printed = self.pretrain(output, "--resume", "--write-shards",
                                      shards)
        self.assertIn("Reusing the complete shards", printed)
        self.assertIn("Resuming at step 4", printed)
        # Its weights come from the checkpoint, not from an initial scale.
        self.assertNotIn("init stddev", printed)
        self.assertEqual(logged_steps(output), [2, 4])

        # Corpus (for the held-out evaluation) and vocabulary come from the
        # shards' manifest.
        reader = os.path.join(self.root, "reader")
        code, printed = self.pretrain(reader, "--shards", shards, corpus=False)
        self.assertEqual(code, 0)
        self.assertIn("corpus: 40 documents", printed)
        self.assertEqual(logged_steps(reader), [2, 4])
        with open(os.path.join(reader, "vocab.txt")) as a, open(
                self.vocabulary) as b:
            self.assertEqual(a.read().split(), b.read().split())
        self.assertIn("sequence_length=24 but this run uses 32", cli_error(
            *self.pretrain_args(os.path.join(self.root, "longer"),
                                "--shards", shards, "--sequence-length",
                                "32", corpus=False)))

    @pytest.mark.slow
    def test_resume_after_a_kill_continues_step_and_optimizer(self):
        output = os.path.join(self.root, "resumed")

        def job(print_fn=print, directory=output):
            return PretrainingJob(
                directory, corpus_files=[self.corpus],
                vocabulary=self.vocabulary, config=SMALL_MODEL, steps=8,
                batch_size=8, sequence_length=24, heldout_fraction=0.3,
                log_every=2, checkpoint_every=2, resume=True,
                next_sentence_prediction=True, jit_compile=False,
                print_fn=print_fn)

        def kill_at_step_4(line):
            if line.startswith("step 4/"):
                raise Interrupted(line)

        first = job(kill_at_step_4)
        first.prepare()
        with self.assertRaises(Interrupted):
            first.train()
        self.assertEqual(int(first.model.optimizer.iterations), 4)
        self.assertEqual(logged_steps(output), [2, 4])

        lines = []
        second = job(lines.append)
        second.prepare()
        # The restored state is the killed run's: weights and every
        # optimizer variable (step counter, Adam moments).
        state = PretrainingCheckpoint.restore(
            second.model, os.path.join(output, "checkpoints"))
        self.assertEqual(state["step"], 4)
        for a, b in zip(first.model.weights, second.model.weights):
            np.testing.assert_array_equal(ops.convert_to_numpy(a),
                                          ops.convert_to_numpy(b))
        for a, b in zip(first.model.optimizer.variables,
                        second.model.optimizer.variables):
            np.testing.assert_array_equal(ops.convert_to_numpy(a),
                                          ops.convert_to_numpy(b))
        second.train()
        self.assertEqual(second.start_step, 4)
        self.assertTrue(any(line.startswith("Resuming at step 4 from")
                            for line in lines), lines)
        self.assertEqual(int(second.model.optimizer.iterations), 8)
        self.assertEqual(logged_steps(output), [2, 4, 6, 8])
        # The learning-rate schedule continues too (no second warmup).
        with open(os.path.join(output, "metrics.jsonl")) as file:
            rates = [json.loads(line)["learning_rate"] for line in file]
        self.assertEqual(rates, sorted(rates, reverse=True))
        # And it ends where an unbroken run ends: the same pairs, masks,
        # weights and held-out figures.
        resumed = second.evaluate(max_batches=2)
        unbroken = job(None, os.path.join(self.root, "unbroken"))
        unbroken.prepare()
        unbroken.train()
        for a, b in zip(second.model.weights, unbroken.model.weights):
            np.testing.assert_allclose(ops.convert_to_numpy(a),
                                       ops.convert_to_numpy(b), atol=1e-6)
        expected = unbroken.evaluate(max_batches=2)
        for key in ("masked_tokens", "mlm_accuracy", "mlm_loss",
                    "nsp_accuracy"):
            self.assertAlmostEqual(resumed[key], expected[key], places=5)

    def test_the_job_trains_on_its_mask_token_rate(self):
        job = PretrainingJob(os.path.join(self.root, "all_mask"),
                             corpus_files=[self.corpus],
                             vocabulary=self.vocabulary, config=SMALL_MODEL,
                             steps=2, batch_size=8, sequence_length=24,
                             heldout_fraction=0.3, print_fn=None,
                             mask_token_rate=1.0)
        job.prepare()
        x, _, weights = next(iter(job.training_batches()))
        shown = np.take_along_axis(x["token_ids"].numpy(),
                                   x["mask_positions"].numpy(), 1)
        predicted = weights["mlm_logits"].numpy() > 0
        self.assertTrue(np.all(shown[predicted]
                               == job.tokenizer.mask_token_id))

    def test_interrupted_save_keeps_the_previous_checkpoint(self):
        output = os.path.join(self.root, "saves")
        job = PretrainingJob(output, corpus_files=[self.corpus],
                             vocabulary=self.vocabulary, config=SMALL_MODEL,
                             steps=2, batch_size=8, sequence_length=24,
                             heldout_fraction=0.3, print_fn=None)
        job.prepare()
        job.model.optimizer.build(job.model.trainable_variables)
        directory = os.path.join(output, "checkpoints")
        callback = PretrainingCheckpoint(directory, save_every=2)
        callback.set_model(job.model)
        callback.save(2)
        with mock.patch("numpy.savez", side_effect=KeyboardInterrupt):
            with self.assertRaises(KeyboardInterrupt):
                callback.save(4)
        self.assertEqual(sorted(os.listdir(directory)), ["ckpt-00000002"])
        self.assertEqual(PretrainingCheckpoint.restore(job.model, directory),
                         {"step": 2})


class PretrainBadInputTest(TestCase):
    def setUp(self):
        super().setUp()
        self.root = self.get_temp_dir()
        self.vocabulary = write_toy_vocabulary(self.root)

    def assertFails(self, lines_or_bytes, pattern, *extra):
        path = os.path.join(self.root, "bad.txt")
        if isinstance(lines_or_bytes, bytes):
            with open(path, "wb") as file:
                file.write(lines_or_bytes)
        else:
            write_lines(path, lines_or_bytes)
        output = os.path.join(self.root, "out")
        self.assertRegex(cli_error(
            "pretrain", "--corpus", path, "--vocab", self.vocabulary,
            "--steps", "2", "--output", output, *extra), pattern)
        # A run that fails before training leaves no folder behind.
        self.assertFalse(os.path.exists(output))

    def test_missing_corpus(self):
        missing = os.path.join(self.root, "missing.txt")
        self.assertIn(f"{missing}: no such file.", cli_error(
            "pretrain", "--corpus", missing, "--steps", "2", "--output",
            os.path.join(self.root, "out")))
        self.assertFalse(os.path.exists(os.path.join(self.root, "out")))

    def test_file_without_sentences(self):
        self.assertFails(["", "   ", ""], "bad.txt contains no sentences")

    def test_non_utf8_file(self):
        self.assertFails(b"w1 w2 .\nw3 w4 .\nw5 caf\xe9 .\n",
                         r"bad.txt, line 3: not valid UTF-8")

    def test_one_sentence_documents(self):
        # Only next-sentence prediction needs pairs.
        self.assertFails(["w1 w2 w3 .", "", "w4 w5 .", "", "w6 w7 ."],
                         r"bad.txt: every document has one sentence \(the "
                         r"first at line 1\).*--no-nsp", "--nsp")

    def test_vocabulary_size_mismatch(self):
        self.assertFails(["w1 w2 .", "w3 w4 ."],
                         "--vocab-size is 100 but the vocabulary .*vocab.txt "
                         "has 31 tokens", "--vocab-size", "100")


class FillMaskReportTest(TestCase):
    def example(self, rank):
        return {"text": "Return the [MASK] of x.", "answer": "length",
                "predictions": [("value", 0.1), ("the", 0.05)],
                "rank": rank}

    def test_a_run_without_hits_says_what_minutes_buy(self):
        report = format_fill_mask([self.example(None)] * 5)
        self.assertIn("0 of 5 answers in the top five", report)
        self.assertIn("docs/pretraining.md#quality-per-minute", report)
        report = format_fill_mask([self.example(None)] * 4
                                  + [self.example(2)])
        self.assertIn("1 of 5 answers in the top five", report)
        self.assertIn("+ answer: length (#2)", report)
        self.assertNotIn("quality-per-minute", report)

    def test_the_rate_over_many_sentences_is_printed_with_its_baseline(self):
        summary = {"examples": 300, "model_top5": 0.367,
                   "frequency_top5": 0.113, "above_frequency": 0.77}
        report = format_fill_mask([self.example(None)] * 5, summary)
        self.assertIn("over 300 held-out sentences masked the same way: the "
                      "answer is in the model's top five\n   in 37% (among "
                      "the five most frequent tokens: 11%), ranked higher "
                      "than by word frequency in 77%", report)
        # Not when the five printed are all there is.
        self.assertNotIn("held-out sentences masked", format_fill_mask(
            [self.example(None)] * 5, {**summary, "examples": 5}))

    def test_ranks_below_the_top_five_are_compared_with_frequency(self):
        ranked = [{**self.example(None), "model_rank": model,
                   "frequency_rank": frequency}
                  for model, frequency in ((40, 1_200), (7, 3), (150, 150))]
        report = format_fill_mask(ranked)
        self.assertIn("the model ranks it 40; word frequency alone, 1,200",
                      report)
        # Strictly higher only: 40 < 1,200 counts, 7 > 3 and a tie do not.
        self.assertIn("1 of 3 answers ranked higher by the model than by "
                      "word frequency alone", report)
        self.assertNotIn("word frequency alone",
                         format_fill_mask([self.example(None)]))
