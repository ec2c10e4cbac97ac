"""Original Google TF checkpoints load with the reference's numbers."""

import numpy as np

import keras_bert
from keras_bert.checkpoints import CheckpointError
from tests.checkpoints import reference_checkpoints as ref
from tests.test_case import TestCase
from tests.test_case import to_numpy

ATOL = 1e-5


def google_config(**overrides):
    config = {
        "attention_probs_dropout_prob": 0.1,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "hidden_size": ref.TINY_CONFIG["hidden_size"],
        "initializer_range": 0.02,
        "intermediate_size": ref.TINY_CONFIG["intermediate_size"],
        "max_position_embeddings": ref.TINY_CONFIG["max_position_embeddings"],
        "num_attention_heads": ref.TINY_CONFIG["num_attention_heads"],
        "num_hidden_layers": ref.TINY_CONFIG["num_hidden_layers"],
        "type_vocab_size": 2,
        "vocab_size": ref.TINY_CONFIG["vocab_size"],
    }
    config.update(overrides)
    return config


class GoogleCheckpointTest(TestCase):
    def setUp(self):
        super().setUp()
        # The reference: a random BertForPreTraining (never written to disk
        # in HF format here), its weights re-saved under Google's names.
        import transformers

        self.reference = ref.randomize(transformers.BertForPreTraining(
            transformers.BertConfig(**ref.TINY_CONFIG)), seed=3)
        self.variables = ref.google_variables(
            self.reference.state_dict(), ref.TINY_CONFIG["num_hidden_layers"])
        self.inputs = ref.tiny_inputs()

    def write(self, variables=None, **config):
        return ref.write_google_checkpoint(
            self.variables if variables is None else variables,
            self.get_temp_dir(), google_config(**config))

    def test_pretrainer_matches_reference(self):
        directory = self.write()
        self.assertEqual(keras_bert.checkpoints.detect_layout(directory),
                         "google")
        model = keras_bert.BertPretrainer.from_preset(directory)
        expected = ref.huggingface_outputs(self.reference, self.inputs)
        actual = to_numpy(model(self.inputs))
        self.assertAllClose(
            actual["mlm_logits"],
            ref.masked_logits(expected["prediction_logits"],
                              self.inputs["mask_positions"]),
            atol=ATOL, rtol=0)
        self.assertAllClose(actual["nsp_logits"],
                            expected["seq_relationship_logits"],
                            atol=ATOL, rtol=0)

    def test_backbone_matches_reference(self):
        backbone = keras_bert.BertBackbone.from_preset(self.write())
        inputs = {k: self.inputs[k]
                  for k in ("token_ids", "segment_ids", "padding_mask")}
        expected = ref.huggingface_outputs(self.reference.bert, inputs)
        actual = to_numpy(backbone(inputs))
        self.assertAllClose(actual["sequence_output"],
                            expected["last_hidden_state"], atol=ATOL, rtol=0)
        self.assertAllClose(actual["pooled_output"],
                            expected["pooler_output"], atol=ATOL, rtol=0)

    def test_unknown_variable_is_reported_by_its_google_name(self):
        variables = dict(self.variables)
        variables["bert/encoder/layer_0/extra/kernel"] = np.zeros((2, 2))
        directory = self.write(variables)
        with self.assertRaisesRegex(CheckpointError,
                                    "bert/encoder/layer_0/extra/kernel"):
            keras_bert.BertBackbone.from_preset(directory)

    def test_missing_variable_is_listed(self):
        variables = dict(self.variables)
        del variables["bert/encoder/layer_1/attention/self/key/kernel"]
        with self.assertRaisesRegex(
            CheckpointError, r"encoder\.layer\.1\.attention\.self\.key\.weight"
        ):
            keras_bert.BertBackbone.from_preset(self.write(variables))

    def test_transposed_nsp_weights_are_a_shape_error(self):
        # Google stores output_weights as (2, hidden); (hidden, 2) is wrong.
        variables = dict(self.variables)
        name = "cls/seq_relationship/output_weights"
        variables[name] = variables[name].T
        with self.assertRaisesRegex(CheckpointError, name):
            keras_bert.BertPretrainer.from_preset(self.write(variables))
