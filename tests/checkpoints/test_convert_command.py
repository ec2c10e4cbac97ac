"""`keras-bert convert`: Google -> preset -> Hugging Face, outputs kept."""

import os

import keras_bert
from tests.checkpoints import reference_checkpoints as ref
from tests.checkpoints.test_google_checkpoint import google_config
from tests.commands import cli_helpers
from tests.test_case import TestCase
from tests.test_case import to_numpy


def run_cli(*argv):
    return cli_helpers.run_cli("convert", *argv)


class ConvertCommandTest(TestCase):
    def test_google_to_preset_to_huggingface(self):
        import transformers

        reference = ref.randomize(transformers.BertForPreTraining(
            transformers.BertConfig(**ref.TINY_CONFIG)), seed=5)
        scratch = self.get_temp_dir()
        google = os.path.join(scratch, "google")
        os.makedirs(google)
        ref.write_google_checkpoint(
            ref.google_variables(reference.state_dict(),
                                 ref.TINY_CONFIG["num_hidden_layers"]),
            google, google_config())

        preset = os.path.join(scratch, "preset")
        code, printed = run_cli(google, preset)
        self.assertEqual(code, 0, printed)
        self.assertIn("BertPretrainer", printed)
        self.assertIn("verify: sequence_output max-abs difference", printed)
        for name in ("config.json", "model.weights.h5", "metadata.json",
                     "vocab.txt", "tokenizer_config.json"):
            self.assertTrue(os.path.isfile(os.path.join(preset, name)), name)

        hf_dir = os.path.join(scratch, "hf")
        code, printed = run_cli(preset, hf_dir)
        self.assertEqual(code, 0, printed)
        converted, info = transformers.BertForPreTraining.from_pretrained(
            hf_dir, output_loading_info=True)
        self.assertEqual(
            [list(info[k]) for k in ("missing_keys", "unexpected_keys")],
            [[], []])
        inputs = ref.tiny_inputs()
        expected = ref.huggingface_outputs(reference, inputs)
        actual = ref.huggingface_outputs(converted.eval(), inputs)
        self.assertAllClose(actual["prediction_logits"],
                            expected["prediction_logits"], atol=1e-5, rtol=0)
        hf_tokenizer = transformers.BertTokenizerFast.from_pretrained(hf_dir)
        self.assertEqual(hf_tokenizer.convert_ids_to_tokens([7, 17]),
                         ["cat", "##s"])

    def test_backbone_only(self):
        source = self.get_temp_dir()
        ref.make_huggingface("BertForPreTraining", source)
        preset = os.path.join(self.get_temp_dir(), "preset")
        code, printed = run_cli(source, preset, "--model", "backbone",
                                "--no-verify")
        self.assertEqual(code, 0, printed)
        self.assertIn("model: BertBackbone", printed)
        restored = keras_bert.BertBackbone.from_preset(preset)
        original = keras_bert.BertBackbone.from_preset(source)
        inputs = {k: v for k, v in ref.tiny_inputs().items()
                  if k != "mask_positions"}
        self.assertAllClose(to_numpy(restored(inputs)),
                            to_numpy(original(inputs)), atol=0, rtol=0)
