"""`keras-bert finetune`, `predict` and `evaluate`, run in-process.

A tiny random BERT preset and tiny generated files: the checks are that
each command reads its files, trains, writes what it promises (the best
preset with its labels, metrics, plot) and that the saved model is the
best epoch's (evaluate on the validation file gives its recorded score).
"""

import contextlib
import csv
import io
import json
import os
import shutil
import tempfile
from unittest import mock

import keras
import numpy as np
import pytest

from keras_bert import BertBackbone
from keras_bert import BertClassifier
from keras_bert import cli
from keras_bert.checkpoints import save_to_preset
from keras_bert.preprocessing import BertTokenizer
from tests.test_case import TestCase

WORDS = ("good great fine bad awful poor movie film the a is was john mary "
         "lives in york paris who sat on mat cat dog where ? .").split()
VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
TINY = dict(vocabulary_size=len(VOCABULARY), num_layers=1, num_heads=2,
            hidden_dim=16, intermediate_dim=32, max_sequence_length=48)

SENTENCES = [("the movie was good", "pos"), ("a great film", "pos"),
             ("the film is fine", "pos"), ("a bad movie", "neg"),
             ("the film was awful", "neg"), ("poor movie", "neg")]
NER = [(["john", "lives", "in", "york"], ["B-PER", "O", "O", "B-LOC"]),
       (["mary", "sat", "in", "paris"], ["B-PER", "O", "O", "B-LOC"]),
       (["the", "cat", "sat"], ["O", "O", "O"])]
CONTEXT = "the cat sat on the mat . john lives in york ."


def run_cli(*argv, stdin=None):
    """`(exit code, stdout, stderr)` of `keras-bert ARGV`."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            mock.patch("sys.stdin", io.StringIO(stdin or "")):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


def write(path, text):
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path


def squad_json(questions):
    return json.dumps({"data": [{"paragraphs": [{"context": CONTEXT, "qas": [
        {"id": f"q{i}", "question": question,
         "answers": [{"text": answer, "answer_start": CONTEXT.index(answer)}]}
        for i, (question, answer) in enumerate(questions)]}]}]})


class FinetuneCommandTest(TestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.root = tempfile.mkdtemp()
        keras.utils.set_random_seed(0)
        cls.preset = os.path.join(cls.root, "pretrained")
        save_to_preset(BertBackbone(**TINY), cls.preset,
                       tokenizer=BertTokenizer(VOCABULARY))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root, ignore_errors=True)
        super().tearDownClass()

    def table(self, name, header, rows):
        lines = ["\t".join(header)] + ["\t".join(row) for row in rows]
        return write(os.path.join(self.get_temp_dir(), name),
                     "\n".join(lines) + "\n")

    def finetune(self, task, train, validation, *options):
        output = os.path.join(self.get_temp_dir(), "run")
        code, printed, errors = run_cli(
            "finetune", "--task", task, "--train", train, "--validation",
            validation, "--model", self.preset, "--output", output,
            "--epochs", "2", "--batch-size", "32", "--sequence-length", "16",
            "--learning-rate", "1e-3", *options)
        self.assertEqual(code, 0, printed + errors)
        return output, printed

    def assert_run_files(self, output, labels, monitor):
        best = os.path.join(output, "best")
        for name in ("config.json", "model.weights.h5", "vocab.txt",
                     "finetune.json"):
            self.assertTrue(os.path.isfile(os.path.join(best, name)), name)
        with open(os.path.join(best, "finetune.json")) as handle:
            self.assertEqual(json.load(handle)["labels"], labels)
        with open(os.path.join(output, "metrics.csv")) as handle:
            rows = list(csv.DictReader(handle))
        self.assertEqual([row["epoch"] for row in rows], ["1", "2"])
        self.assertIn(f"val_{monitor}", rows[0])
        with open(os.path.join(output, "curves.png"), "rb") as handle:
            self.assertEqual(handle.read(8), b"\x89PNG\r\n\x1a\n")
        with open(os.path.join(output, "results.json")) as handle:
            results = json.load(handle)
        scores = [float(row[f"val_{monitor}"]) for row in rows]
        self.assertEqual(results["best"][f"val_{monitor}"], max(scores))
        return results

    def assert_evaluate_matches(self, output, results, data, monitor,
                                *options):
        code, printed, errors = run_cli(
            "evaluate", "--model", os.path.join(output, "best"), "--data",
            data, *options)
        self.assertEqual(code, 0, errors)
        scores = json.loads(printed)
        # The saved model is the best epoch's: same score on the same file.
        self.assertAlmostEqual(scores[monitor],
                               results["best"][f"val_{monitor}"], places=4)

    @pytest.mark.slow
    def test_classify_then_predict_and_evaluate(self):
        data = self.table("train.tsv", ["sentence", "label"], SENTENCES)
        output, printed = self.finetune("classify", data, data,
                                        "--text-column", "sentence")
        self.assertIn("labels: neg, pos", printed)
        results = self.assert_run_files(output, ["neg", "pos"], "accuracy")
        self.assert_evaluate_matches(output, results, data, "accuracy")
        best = os.path.join(output, "best")
        code, printed, _ = run_cli("predict", "--model", best,
                                   stdin="a good film\n\nawful movie\n")
        self.assertEqual(code, 0)
        lines = printed.splitlines()
        self.assertEqual(len(lines), 2)
        for line in lines:
            label, probability = line.split("\t")
            self.assertIn(label, ("neg", "pos"))
            self.assertGreaterEqual(float(probability), 0.5)
        inputs = write(os.path.join(self.get_temp_dir(), "in.txt"), "good\n")
        code, printed, _ = run_cli("predict", "--model", best, "--input",
                                   inputs, "--format", "json")
        self.assertEqual(code, 0)
        prediction = json.loads(printed)
        self.assertAlmostEqual(sum(prediction["probabilities"].values()), 1.0,
                               places=5)
        self.assert_runs_in_lower_precision(best, inputs, prediction, data)

    def assert_runs_in_lower_precision(self, best, inputs, prediction, data):
        from keras_bert.commands.predict import load_finetuned

        int8, _ = load_finetuned(best, "int8")
        self.assertEqual(int8.backbone.pooler.quantization_mode, "int8")
        bfloat16, _ = load_finetuned(best, "bfloat16")
        self.assertEqual(bfloat16.backbone.compute_dtype, "bfloat16")
        for precision in ("int8", "bfloat16"):
            code, printed, _ = run_cli("predict", "--model", best, "--input",
                                       inputs, "--format", "json",
                                       "--precision", precision)
            self.assertEqual(code, 0)
            probabilities = json.loads(printed)["probabilities"]
            # Close to float32's, but not float32's own numbers.
            self.assertNotEqual(probabilities, prediction["probabilities"])
            for label, value in prediction["probabilities"].items():
                self.assertAlmostEqual(probabilities[label], value, delta=0.05)
            code, printed, errors = run_cli(
                "evaluate", "--model", best, "--data", data, "--precision",
                precision)
            self.assertEqual(code, 0, errors)
            self.assertEqual(json.loads(printed)["precision"], precision)

    @pytest.mark.slow
    def test_lora_trains_adapters_and_saves_the_merged_model(self):
        data = self.table("train.tsv", ["sentence", "label"], SENTENCES)
        output, printed = self.finetune("classify", data, data,
                                        "--text-column", "sentence",
                                        "--lora-rank", "2")
        self.assertRegex(printed, r"parameters, [\d,]+ of them trained "
                                  r"\(LoRA rank 2\)")
        results = self.assert_run_files(output, ["neg", "pos"], "accuracy")
        self.assertEqual(results["recipe"]["lora_rank"], 2)
        # The best preset is a plain BERT with the adapters merged in: its
        # frozen weights are the pretrained ones, its q/k/v kernel moved,
        # and it scores what the run recorded.
        pretrained = BertBackbone.from_preset(self.preset)
        tuned = BertBackbone.from_preset(os.path.join(output, "best"))
        self.assertFalse(any("lora" in w.path for w in tuned.weights))
        before = {w.path: keras.ops.convert_to_numpy(w)
                  for w in pretrained.weights}
        for weight in tuned.weights:
            moved = not np.array_equal(keras.ops.convert_to_numpy(weight),
                                       before[weight.path])
            self.assertEqual(moved, weight.path.endswith(
                "query_key_value/kernel"), weight.path)
        self.assert_evaluate_matches(output, results, data, "accuracy")
        # The adapters alone, loaded onto the pretrained model, give the
        # best preset's logits.
        self.assertIn("best.lora.safetensors", printed)
        texts = [sentence for sentence, _ in SENTENCES]
        best = BertClassifier.from_preset(os.path.join(output, "best"))
        adapted = BertClassifier.from_preset(self.preset, num_classes=2,
                                             sequence_length=16)
        adapted.load_lora_weights(
            os.path.join(output, "best.lora.safetensors"))
        self.assertAllClose(adapted.predict(texts, verbose=0),
                            best.predict(texts, verbose=0), atol=1e-5)

    @pytest.mark.slow
    def test_pair(self):
        rows = [(a, b, "same" if a[-1] == b[-1] else "different")
                for a, _ in SENTENCES[:4] for b, _ in SENTENCES[2:]]
        data = self.table("pairs.tsv", ["a", "b", "y"], rows)
        columns = ("--text-column", "a", "--text-pair-column", "b",
                   "--label-column", "y")
        output, _ = self.finetune("pair", data, data, *columns)
        results = self.assert_run_files(output, ["different", "same"],
                                        "accuracy")
        self.assert_evaluate_matches(output, results, data, "accuracy")
        code, printed, _ = run_cli("predict", "--model",
                                   os.path.join(output, "best"),
                                   stdin="a good film\tthe film is fine\n")
        self.assertEqual(code, 0)
        self.assertIn(printed.split("\t")[0], ("different", "same"))
        self.assert_fails("stdin:2: 1 tab-separated fields; --task pair "
                          "takes 2", "predict", "--model",
                          os.path.join(output, "best"),
                          stdin="good\tfine\ngood\n")

    @pytest.mark.slow
    def test_ner(self):
        text = "\n\n".join("\n".join(f"{w} X {t}" for w, t in zip(*s))
                           for s in NER)
        data = write(os.path.join(self.get_temp_dir(), "train.txt"),
                     "-DOCSTART- X O\n\n" + text + "\n")
        output, _ = self.finetune("ner", data, data)
        results = self.assert_run_files(output, ["O", "B-LOC", "B-PER"], "f1")
        self.assert_evaluate_matches(output, results, data, "f1")
        code, printed, _ = run_cli("predict", "--model",
                                   os.path.join(output, "best"),
                                   stdin="john sat in paris\n")
        self.assertEqual(code, 0)
        pairs = [item.rsplit("/", 1) for item in printed.split()]
        self.assertEqual([w for w, _ in pairs],
                         ["john", "sat", "in", "paris"])
        self.assertTrue({t for _, t in pairs} <= {"O", "B-LOC", "B-PER"})

    @pytest.mark.slow
    def test_squad(self):
        path = os.path.join(self.get_temp_dir(), "train.json")
        write(path, squad_json([("who sat ?", "the cat"),
                                ("where is the cat ?", "the mat"),
                                ("who lives in york ?", "john")]))
        output, printed = self.finetune("squad", path, path)
        self.assertIn("windows", printed)
        results = self.assert_run_files(output, None, "f1")
        self.assert_evaluate_matches(output, results, path, "f1")
        self.assertIn("val_exact_match", results["best"])
        code, printed, _ = run_cli("predict", "--model",
                                   os.path.join(output, "best"),
                                   stdin=f"who sat ?\t{CONTEXT}\n")
        self.assertEqual(code, 0)
        self.assertIn(printed.rstrip("\n"), CONTEXT)

    # Bad input ---------------------------------------------------------------

    def assert_fails(self, message, *argv, stdin=None):
        code, _, errors = run_cli(*argv, stdin=stdin)
        self.assertEqual(code, 2, errors)
        self.assertIn(message, errors)
        return errors

    def finetune_args(self, task, train, validation, *options):
        return ("finetune", "--task", task, "--train", train,
                "--validation", validation, "--model", self.preset,
                "--output", os.path.join(self.get_temp_dir(), "run"),
                *options)

    def test_label_set_differs_between_files(self):
        train = self.table("train.tsv", ["text", "label"], SENTENCES)
        dev = self.table("dev.tsv", ["text", "label"],
                         [("good", "pos"), ("so so", "meh")])
        errors = self.assert_fails(f"{dev}:3: label 'meh' is not one of",
                                   *self.finetune_args("classify", train,
                                                       dev))
        self.assertIn("neg, pos", errors)

    def test_label_ids_out_of_range(self):
        train = self.table("train.tsv", ["text", "label"],
                           [("good", "1"), ("bad", "0"), ("fine", "5")])
        self.assert_fails(f"{train}:4: label '5' is out of range",
                          *self.finetune_args("classify", train, train,
                                              "--labels", "neg,pos"))

    def test_choice_label_out_of_range(self):
        train = self.table("swag.tsv", ["text", "c0", "c1", "label"],
                           [("the cat", "sat", "flew", "0"),
                            ("john", "lives", "mat", "2")])
        self.assert_fails(f"{train}:3: label '2' is out of range",
                          *self.finetune_args("choice", train, train,
                                              "--choice-columns", "c0,c1"))

    def test_empty_file_and_missing_column(self):
        train = self.table("train.tsv", ["text", "label"], SENTENCES)
        empty = write(os.path.join(self.get_temp_dir(), "dev.tsv"), "")
        self.assert_fails(f"{empty}: the file is empty",
                          *self.finetune_args("classify", train, empty))
        self.assert_fails("no column ['sentence']",
                          *self.finetune_args("classify", train, train,
                                              "--text-column", "sentence"))

    def test_ner_tags_must_be_iob(self):
        data = write(os.path.join(self.get_temp_dir(), "train.txt"),
                     "john PER\nlives O\n")
        self.assert_fails(f"{data}:1: tag 'PER' is not IOB",
                          *self.finetune_args("ner", data, data))

    def test_malformed_rows_stop_the_run_with_their_lines(self):
        from keras_bert.commands import task_files

        train = write(os.path.join(self.get_temp_dir(), "bad.tsv"),
                      "text\tlabel\ngood\tpos\nbad\tneg\textra\nfine\n"
                      + "a great film\tpos\n" * 3)
        argv = self.finetune_args("classify", train, train)
        self.assert_fails(f"{train}: 2 of 6 rows are malformed (lines 3, 4; "
                          "line 3: its cells do not match the header's). "
                          "Fix them, or leave them out with --skip-bad-rows",
                          *argv)
        # The run failed before training: no output folder is left.
        self.assertFalse(os.path.exists(argv[argv.index("--output") + 1]))
        columns = task_files.resolve_columns("classify", mock.Mock(**{
            option: None for option in task_files.COLUMN_OPTIONS.values()}))
        with self.assertLogs("keras_bert.preprocessing.tasks.readers") as logs:
            data = task_files.read_task_data("classify", train, columns,
                                             skip_bad_rows=True)
        self.assertEqual(data["count"], 4)
        self.assertIn("skipped 2 of 6 malformed rows (lines 3, 4)",
                      logs.output[0])

    def test_a_run_that_fails_to_load_leaves_no_output_folder(self):
        train = self.table("train.tsv", ["text", "label"], SENTENCES)
        argv = list(self.finetune_args("classify", train, train))
        argv[argv.index("--model") + 1] = os.path.join(self.get_temp_dir(),
                                                       "missing")
        self.assert_fails("no such directory", *argv)
        self.assertFalse(os.path.exists(argv[argv.index("--output") + 1]))
        # Nor one whose sequence length the model cannot hold.
        argv = self.finetune_args("classify", train, train,
                                  "--sequence-length", "600")
        self.assert_fails("sequence_length=600 tokens but the backbone has "
                          "max_sequence_length=48 positions", *argv)
        self.assertFalse(os.path.exists(argv[argv.index("--output") + 1]))

    def test_evaluate_refuses_labels_the_model_does_not_spell(self):
        from keras_bert.commands.predict import save_task_info

        best = os.path.join(self.get_temp_dir(), "best")
        os.makedirs(best)
        save_task_info(best, {"task": "classify", "labels": ["neg", "pos"],
                              "columns": {"text": "text"}})
        data = self.table("dev.tsv", ["text", "label"],
                          [("good", "1"), ("bad", "0")])
        self.assert_fails(f"{data}:3: label '0' is not one of the model's "
                          "labels (neg, pos)", "evaluate", "--model", best,
                          "--data", data)
        # Names that say nothing (a checkpoint's default id2label) take ids.
        from keras_bert.commands.task_files import check_model_labels

        check_model_labels("classify", {"path": data, "labels": ["1", "0"]},
                           ["LABEL_0", "LABEL_1"], {"label": "label"})

    def test_an_earlier_run_in_output_is_announced(self):
        from keras_bert.commands.finetune import _check_output

        output = self.get_temp_dir()
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            _check_output(output)
        self.assertEqual(printed.getvalue(), "")
        os.makedirs(os.path.join(output, "best"))
        write(os.path.join(output, "best", "config.json"), "{}")
        with contextlib.redirect_stdout(printed):
            _check_output(output)
        self.assertIn("holds an earlier run: its best/ is replaced",
                      printed.getvalue())

    def test_missing_model_and_options(self):
        model = os.path.join(self.get_temp_dir(), "missing")
        self.assert_fails("no such directory", "predict", "--model", model)
        # A pretrained checkpoint is not what predict and evaluate read.
        pretrained = os.path.join(self.get_temp_dir(), "hf")
        os.makedirs(pretrained)
        write(os.path.join(pretrained, "config.json"),
              '{"model_type": "bert", "num_hidden_layers": 1}')
        for command in (("predict",), ("evaluate", "--data", "x.tsv")):
            self.assert_fails("is a pretrained Hugging Face checkpoint, not "
                              "a fine-tuned model", *command, "--model",
                              pretrained, stdin="text\n")
        self.assert_fails("choice needs --choice-columns",
                          *self.finetune_args("choice", "a.tsv", "b.tsv"))
        self.assert_fails("--lora-rank must be at least 1, got 0",
                          *self.finetune_args("classify", "a.tsv", "b.tsv",
                                              "--lora-rank", "0"))
