import os
import re

from keras_bert.checkpoints import save_to_preset
from keras_bert.training.fill_mask import fill_mask
from tests.commands.cli_helpers import cli_error
from tests.commands.cli_helpers import run_cli
from tests.commands.cli_helpers import write_toy_pretrainer_preset
from tests.test_case import TestCase

ROW = re.compile(r"^\s+(?:\[MASK\](?: \d)?)?\s+(\d+)\. (\S+)\s+([01]\.\d{4})$")


class FillMaskCommandTest(TestCase):
    def setUp(self):
        super().setUp()
        self.preset, self.model, self.tokenizer = (
            write_toy_pretrainer_preset(self.get_temp_dir()))
        self.backbone = self.model.backbone

    def rows(self, output):
        return [ROW.match(line).groups() for line in output.splitlines()
                if ROW.match(line)]

    def test_prints_top_k_tokens_with_probabilities(self):
        text = "w3 w4 [MASK] w6 ."
        code, output = run_cli("fill-mask", self.preset, text, "--top-k", "3")
        self.assertEqual(code, 0)
        self.assertEqual(output.splitlines()[0], text)
        rows = self.rows(output)
        self.assertEqual([int(rank) for rank, _, _ in rows], [1, 2, 3])
        # The rows are the model's own top 3, most likely first.
        expected = fill_mask(self.model, self.tokenizer, text, top_k=3)[0]
        self.assertEqual([token for _, token, _ in rows],
                         [token for token, _ in expected])
        for (_, _, printed), (_, probability) in zip(rows, expected):
            self.assertAlmostEqual(float(printed), probability, places=3)
        self.assertEqual([float(p) for _, _, p in rows],
                         sorted((float(p) for _, _, p in rows), reverse=True))
        # A pretraining run directory stands for its `model/` preset.
        run_directory = os.path.dirname(self.preset)
        self.assertEqual(run_cli("fill-mask", run_directory, text,
                                 "--top-k", "3"), (code, output))

    def test_several_masks_and_texts(self):
        code, output = run_cli("fill-mask", self.preset,
                               "[MASK] w1 [MASK] .", "w7 [MASK] .",
                               "--top-k", "2")
        self.assertEqual(code, 0)
        self.assertEqual(len(self.rows(output)), 6)
        self.assertIn("[MASK] 1", output)
        self.assertIn("[MASK] 2", output)
        self.assertIn("w7 [MASK] .", output)

    def test_text_without_mask(self):
        self.assertRegex(cli_error("fill-mask", self.preset, "w1 w2 ."),
                         r"no \[MASK\] token")

    def test_directory_without_masked_lm_head(self):
        backbone_dir = os.path.join(self.get_temp_dir(), "backbone")
        save_to_preset(self.backbone, backbone_dir, tokenizer=self.tokenizer)
        self.assertIn("holds a BertBackbone, not a BertPretrainer",
                      cli_error("fill-mask", backbone_dir, "w1 [MASK] ."))

    def test_missing_directory_and_vocabulary(self):
        self.assertIn("'/nonexistent': no such directory",
                      cli_error("fill-mask", "/nonexistent", "w1 [MASK] ."))
        no_vocab = os.path.join(self.get_temp_dir(), "no_vocab")
        save_to_preset(self.model, no_vocab)
        self.assertIn("has no vocab.txt",
                      cli_error("fill-mask", no_vocab, "w1 [MASK] ."))
