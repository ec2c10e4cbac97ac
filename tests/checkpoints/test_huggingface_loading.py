"""Hugging Face checkpoints load with outputs equal to `transformers`."""

import os

import numpy as np
import pytest

import keras_bert
from keras_bert.models.bert_classifier import BertClassifier
from keras_bert.models.bert_multiple_choice import BertMultipleChoice
from keras_bert.models.bert_question_answerer import BertQuestionAnswerer
from keras_bert.models.bert_token_classifier import BertTokenClassifier
from tests.checkpoints import reference_checkpoints as ref
from tests.test_case import TestCase
from tests.test_case import to_numpy

ATOL = 1e-5


def backbone_inputs(inputs):
    return {k: inputs[k] for k in ("token_ids", "segment_ids", "padding_mask")}


class MiniLMParityTest(TestCase):
    """The real all-MiniLM-L6-v2 weights against `transformers.BertModel`."""

    @pytest.mark.large
    def test_backbone_matches_transformers_on_padded_pairs(self):
        import transformers

        backbone = keras_bert.BertBackbone.from_preset(ref.MINILM_DIR)
        self.assertEqual(backbone.activation, "gelu")
        hf_tokenizer = transformers.BertTokenizerFast.from_pretrained(
            ref.MINILM_DIR)
        encoded = hf_tokenizer(
            ["A man is playing a guitar.", "Where is the café?",
             "The quick brown fox"],
            ["He plays music on stage tonight.", "Naïve questions, 42!",
             "jumps."],
            padding="longest", return_tensors="np",
        )
        encoded["attention_mask"][0, -3:] = 0  # extra padding in row 0
        inputs = {
            "token_ids": encoded["input_ids"],
            "segment_ids": encoded["token_type_ids"],
            "padding_mask": encoded["attention_mask"],
        }
        reference = transformers.BertModel.from_pretrained(ref.MINILM_DIR)
        expected = ref.huggingface_outputs(reference.eval(), inputs)
        actual = to_numpy(backbone(inputs))
        self.assertAllClose(actual["sequence_output"],
                            expected["last_hidden_state"], atol=ATOL, rtol=0)
        self.assertAllClose(actual["pooled_output"],
                            expected["pooler_output"], atol=ATOL, rtol=0)

    @pytest.mark.large
    def test_tokenizer_from_same_directory_matches_transformers(self):
        import transformers

        from keras_bert.preprocessing import BertTokenizer

        tokenizer = BertTokenizer.from_preset(ref.MINILM_DIR)
        hf_tokenizer = transformers.BertTokenizerFast.from_pretrained(
            ref.MINILM_DIR)
        texts = ["Hello, World!", "Crème brûlée at the CAFÉ",
                 "unaffable tokenization 東京 2024", "  spaces\tand\nlines "]
        expected = [hf_tokenizer(t, add_special_tokens=False)["input_ids"]
                    for t in texts]
        self.assertEqual(to_numpy(tokenizer(texts)), expected)


class TinyPretrainingParityTest(TestCase):
    """A random `BertForPreTraining`: MLM and NSP logits match."""

    def test_pretrainer_heads_match(self):
        directory = self.get_temp_dir()
        reference = ref.make_huggingface("BertForPreTraining", directory)
        inputs = ref.tiny_inputs()
        expected = ref.huggingface_outputs(reference, inputs)

        model = keras_bert.BertPretrainer.from_preset(directory)
        actual = to_numpy(model(inputs))
        self.assertAllClose(
            actual["mlm_logits"],
            ref.masked_logits(expected["prediction_logits"],
                              inputs["mask_positions"]),
            atol=ATOL, rtol=0,
        )
        self.assertAllClose(actual["nsp_logits"],
                            expected["seq_relationship_logits"],
                            atol=ATOL, rtol=0)

    def test_backbone_from_pretraining_checkpoint_ignores_heads(self):
        directory = self.get_temp_dir()
        reference = ref.make_huggingface("BertForPreTraining", directory)
        inputs = ref.tiny_inputs()
        with self.assertLogs("keras_bert.checkpoints", "INFO") as logs:
            backbone = keras_bert.BertBackbone.from_preset(directory)
        self.assertIn("cls.seq_relationship.weight", "\n".join(logs.output))
        expected = ref.huggingface_outputs(reference.bert,
                                           backbone_inputs(inputs))
        self.assertAllClose(
            to_numpy(backbone(backbone_inputs(inputs)))["sequence_output"],
            expected["last_hidden_state"], atol=ATOL, rtol=0)

    def test_config_fields_are_honoured(self):
        directory = self.get_temp_dir()
        reference = ref.make_huggingface(
            "BertModel", directory, hidden_act="gelu_new",
            layer_norm_eps=1e-3, type_vocab_size=3, intermediate_size=24,
            max_position_embeddings=12,
        )
        backbone = keras_bert.BertBackbone.from_preset(directory)
        self.assertEqual(
            (backbone.activation, backbone.layer_norm_epsilon,
             backbone.num_segments, backbone.intermediate_dim,
             backbone.max_sequence_length),
            ("gelu_approximate", 1e-3, 3, 24, 12),
        )
        inputs = backbone_inputs(ref.tiny_inputs())
        inputs["segment_ids"] = inputs["segment_ids"] * 2
        expected = ref.huggingface_outputs(reference, inputs)
        self.assertAllClose(to_numpy(backbone(inputs))["sequence_output"],
                            expected["last_hidden_state"], atol=ATOL, rtol=0)

    def test_dropout_override_turns_all_dropout_off(self):
        # HF configs store both rates (0.1 and 0.1); `dropout=0.0` must
        # switch off attention dropout too, or "deterministic" training
        # runs (and the fine-tuning comparisons) still drop attention.
        directory = self.get_temp_dir()
        ref.make_huggingface("BertModel", directory)
        inputs = backbone_inputs(ref.tiny_inputs())
        for source in (directory, self._preset_of(directory)):
            backbone = keras_bert.BertBackbone.from_preset(source,
                                                           dropout=0.0)
            first, second = (to_numpy(backbone(inputs, training=True))
                             ["sequence_output"] for _ in range(2))
            self.assertAllClose(first, second, atol=0, rtol=0, msg=source)
            kept = keras_bert.BertBackbone.from_preset(
                source, dropout=0.0, attention_dropout=0.5)
            self.assertEqual(kept.attention_dropout, 0.5)

    def test_own_attention_rate_is_kept_under_a_dropout_override(self):
        directory = self.get_temp_dir()
        ref.make_huggingface("BertModel", directory,
                             attention_probs_dropout_prob=0.3)
        backbone = keras_bert.BertBackbone.from_preset(directory, dropout=0.0)
        self.assertEqual((backbone.dropout, backbone.attention_dropout),
                         (0.0, 0.3))

    def _preset_of(self, directory):
        preset = os.path.join(self.get_temp_dir(), "preset")
        keras_bert.BertBackbone.from_preset(directory).save_to_preset(preset)
        return preset

    def test_pickle_weights_load_with_opt_in(self):
        import torch

        directory = self.get_temp_dir()
        reference = ref.make_huggingface("BertModel", directory)
        os.remove(os.path.join(directory, "model.safetensors"))
        torch.save(reference.state_dict(),
                   os.path.join(directory, "pytorch_model.bin"))
        backbone = keras_bert.BertBackbone.from_preset(directory,
                                                       allow_pickle=True)
        inputs = backbone_inputs(ref.tiny_inputs())
        self.assertAllClose(
            to_numpy(backbone(inputs))["pooled_output"],
            ref.huggingface_outputs(reference, inputs)["pooler_output"],
            atol=ATOL, rtol=0)

    def test_sharded_bfloat16_safetensors(self):
        import torch

        directory = self.get_temp_dir()
        reference = ref.make_huggingface("BertModel", directory)
        os.remove(os.path.join(directory, "model.safetensors"))
        reference = reference.to(torch.bfloat16)
        reference.save_pretrained(directory, max_shard_size="4KB")
        self.assertTrue(os.path.isfile(
            os.path.join(directory, "model.safetensors.index.json")))
        backbone = keras_bert.BertBackbone.from_preset(directory)
        inputs = backbone_inputs(ref.tiny_inputs())
        expected = ref.huggingface_outputs(reference.float(), inputs)
        self.assertAllClose(to_numpy(backbone(inputs))["sequence_output"],
                            expected["last_hidden_state"], atol=ATOL, rtol=0)


class FineTunedHeadsTest(TestCase):
    """Fine-tuned HF heads load into the matching keras_bert task models."""

    def check_task(self, hf_class, task_cls, output_key, inputs=None,
                   task_kwargs=None, **kwargs):
        directory = self.get_temp_dir()
        reference = ref.make_huggingface(hf_class, directory, **kwargs)
        if inputs is None:
            inputs = backbone_inputs(ref.tiny_inputs())
        expected = ref.huggingface_outputs(reference, inputs)
        model = task_cls.from_preset(directory, **(task_kwargs or {}))
        actual = to_numpy(model(inputs))
        if output_key == "qa":
            expected = np.stack([expected["start_logits"],
                                 expected["end_logits"]], axis=-1)
        else:
            expected = expected[output_key]
        self.assertAllClose(actual, expected, atol=ATOL, rtol=0)
        return model

    def test_sequence_classifier(self):
        model = self.check_task("BertForSequenceClassification",
                                BertClassifier, "logits", num_labels=3)
        self.assertEqual(model.num_classes, 3)

    def test_token_classifier(self):
        self.check_task("BertForTokenClassification", BertTokenClassifier,
                        "logits", num_labels=5)

    def test_question_answerer(self):
        self.check_task("BertForQuestionAnswering", BertQuestionAnswerer,
                        "qa")

    def test_multiple_choice(self):
        # (batch 1, 2 choices, length): the two rows of the tiny batch.
        inputs = {k: v[None] for k, v in
                  backbone_inputs(ref.tiny_inputs()).items()}
        self.check_task("BertForMultipleChoice", BertMultipleChoice,
                        "logits", inputs=inputs,
                        task_kwargs={"num_choices": 2})

    def test_head_absent_from_checkpoint_keeps_its_init(self):
        directory = self.get_temp_dir()
        ref.make_huggingface("BertModel", directory)
        with self.assertLogs("keras_bert.checkpoints", "INFO") as logs:
            model = BertClassifier.from_preset(directory, num_classes=2)
        self.assertIn("classifier_head", "\n".join(logs.output))
        kernel = to_numpy(model.get_layer("classifier_head").kernel)
        self.assertLess(np.abs(kernel).max(), 0.1)  # truncated normal 0.02
