"""`keras-bert embed FILE` and `keras-bert search INDEX QUERY` on a tiny
`BertTextEmbedder` preset."""

import json
import os

import numpy as np

from keras_bert import BertTextEmbedder
from tests.commands.cli_helpers import cli_error
from tests.commands.cli_helpers import run_cli
from tests.models.test_bert_text_embedder import PASSAGES
from tests.models.test_bert_text_embedder import embedder
from tests.test_case import TestCase


class EmbedAndSearchCommandTest(TestCase):
    def setUp(self):
        super().setUp()
        root = self.get_temp_dir()
        self.model = embedder()
        self.preset = os.path.join(root, "model")
        self.model.save_to_preset(self.preset)
        self.texts_file = os.path.join(root, "texts.txt")
        with open(self.texts_file, "w") as f:
            f.write("\n".join(PASSAGES[:2] + [""] + PASSAGES[2:]) + "\n")
        self.index = os.path.join(root, "index.npy")

    def test_embed_writes_vectors_and_search_finds_the_text(self):
        code, output = run_cli("embed", self.texts_file, "--model",
                               self.preset, "--output", self.index)
        self.assertEqual(code, 0)
        self.assertIn("Wrote 4 vectors of 16 values", output)
        vectors = np.load(self.index)
        self.assertAllClose(vectors, self.model.encode(PASSAGES), atol=1e-5)
        with open(os.path.join(os.path.dirname(self.index),
                               "index.json")) as f:
            self.assertEqual(json.load(f)["texts"], PASSAGES)

        code, output = run_cli("search", self.index, PASSAGES[2],
                               "--top-k", "2", "--format", "json")
        self.assertEqual(code, 0)
        hits = json.loads(output)["results"]
        self.assertEqual(hits[0]["text"], PASSAGES[2])
        self.assertAlmostEqual(hits[0]["score"], 1.0, places=3)
        self.assertEqual(len(hits), 2)

    def test_embed_and_search_in_int8_and_bfloat16(self):
        float_vectors = self.model.encode(PASSAGES)
        for precision in ("int8", "bfloat16"):
            index = os.path.join(self.get_temp_dir(), f"{precision}.npy")
            code, _ = run_cli("embed", self.texts_file, "--model",
                              self.preset, "--output", index,
                              "--precision", precision)
            self.assertEqual(code, 0)
            if precision == "int8":
                model = BertTextEmbedder.from_preset(self.preset)
                model.quantize("int8")
            else:
                model = BertTextEmbedder.from_preset(self.preset,
                                                     dtype="bfloat16")
            vectors = np.load(index)
            self.assertEqual(vectors.dtype, np.float32)
            self.assertAllClose(vectors, model.encode(PASSAGES), atol=1e-6)
            self.assertGreater(np.abs(vectors - float_vectors).max(), 1e-6)
            self.assertGreater(np.sum(vectors * float_vectors, -1).min(),
                               0.95)
            with open(os.path.splitext(index)[0] + ".json") as f:
                self.assertEqual(json.load(f)["precision"], precision)
            code, output = run_cli("search", index, PASSAGES[1],
                                   "--format", "json")
            self.assertEqual(code, 0)
            self.assertEqual(json.loads(output)["results"][0]["text"],
                             PASSAGES[1])

    def test_bad_inputs_name_the_file(self):
        self.assertIn("missing.txt", cli_error("embed", "missing.txt",
                                               "--model", self.preset))
        self.assertIn("nowhere.npy not found",
                      cli_error("search", "nowhere.npy", "a cat"))

    def test_embed_reads_a_table_column_and_defaults_the_output(self):
        table = os.path.join(os.path.dirname(self.index), "rows.tsv")
        with open(table, "w") as f:
            f.write("sentence\tlabel\n" + "".join(
                f"{text}\t1\n" for text in PASSAGES))
        self.assertEqual(run_cli("embed", table, "--model", self.preset)[0],
                         0)
        vectors = np.load(os.path.splitext(table)[0] + ".npy")
        self.assertEqual(vectors.shape, (4, 16))
        self.assertIsInstance(BertTextEmbedder.from_preset(self.preset),
                              BertTextEmbedder)
