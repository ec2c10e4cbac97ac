"""Every command's `--model` takes a pretrained model's name, and runs a
fine-tuned Hugging Face checkpoint with its labels (a Hub-layout cache
built here, offline)."""

import json
import os
import shutil
import tempfile

import numpy as np

import keras_bert
from tests.checkpoints.hub_fixtures import NER_LABELS
from tests.checkpoints.hub_fixtures import SST2_LABELS
from tests.checkpoints.hub_fixtures import write_task_checkpoints
from tests.commands.cli_helpers import cli_error
from tests.commands.cli_helpers import run_cli
from tests.test_case import TestCase

TEXTS = ["the cat sat on the mat .", "a dog was happy !"]


class ModelNamesTest(TestCase):

    @classmethod
    def setUpClass(cls):
        from huggingface_hub import constants

        cls.scratch = tempfile.mkdtemp()
        cls.cache, _ = write_task_checkpoints(cls.scratch)
        cls._saved_cache = constants.HF_HUB_CACHE
        constants.HF_HUB_CACHE = cls.cache

    @classmethod
    def tearDownClass(cls):
        from huggingface_hub import constants

        constants.HF_HUB_CACHE = cls._saved_cache
        shutil.rmtree(cls.scratch, ignore_errors=True)

    def write(self, name, lines):
        path = os.path.join(self.get_temp_dir(), name)
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        return path

    def test_predict_a_huggingface_classifier_by_name(self):
        expected = keras_bert.BertClassifier.from_preset(
            "org/tiny-sst2").predict_labels(TEXTS, verbose=0)
        code, out = run_cli("predict", "--model", "org/tiny-sst2",
                            "--input", self.write("in.txt", TEXTS))
        self.assertEqual(code, 0)
        self.assertEqual([line.split("\t")[0] for line in out.splitlines()],
                         expected)
        self.assertTrue(set(expected) <= set(SST2_LABELS))
        # Lines of two fields are pairs.
        code, out = run_cli("predict", "--model", "org/tiny-sst2", "--input",
                            self.write("pairs.txt", ["the cat\tsat on it"]))
        self.assertEqual(code, 0)
        self.assertIn(out.split("\t")[0], SST2_LABELS)

    def test_predict_a_huggingface_tagger_by_name(self):
        code, out = run_cli("predict", "--model", "org/tiny-ner", "--input",
                            self.write("in.txt", ["the cat sat"]))
        self.assertEqual(code, 0)
        pairs = [item.rsplit("/", 1) for item in out.split()]
        self.assertEqual([word for word, _ in pairs], ["the", "cat", "sat"])
        self.assertTrue({tag for _, tag in pairs} <= set(NER_LABELS))

    def test_evaluate_takes_the_checkpoints_label_names(self):
        data = self.write("dev.tsv", ["text\tlabel",
                                      "the cat sat\tpositive",
                                      "a dog was happy\tnegative"])
        output = os.path.join(self.get_temp_dir(), "scores.json")
        code, _ = run_cli("evaluate", "--model", "org/tiny-sst2", "--data",
                          data, "--output", output)
        self.assertEqual(code, 0)
        with open(output) as f:
            self.assertIn("accuracy", json.load(f))

    def test_embed_and_search_by_name(self):
        name = "sentence-transformers/all-MiniLM-L6-v2"
        index = os.path.join(self.get_temp_dir(), "index.npy")
        code, _ = run_cli("embed", self.write("texts.txt", TEXTS), "--model",
                          name, "--output", index)
        self.assertEqual(code, 0)
        expected = keras_bert.BertTextEmbedder.from_preset(name).encode(
            TEXTS, verbose=0)
        self.assertAllClose(np.load(index), expected, atol=1e-5)
        code, out = run_cli("search", index, "where did the cat sit?")
        self.assertEqual(code, 0)
        self.assertIn(TEXTS[0], out)

    def test_fill_mask_by_legacy_id(self):
        code, out = run_cli("fill-mask", "bert-base-uncased",
                            "the cat [MASK] on the mat .")
        self.assertEqual(code, 0)
        self.assertIn("[MASK]", out)

    def test_uncached_name_is_one_line(self):
        message = cli_error("predict", "--model", "org/not-cached", "--input",
                            self.write("in.txt", TEXTS))
        self.assertIn("org/not-cached", message)
        self.assertIn("HF_HUB_OFFLINE", message)
