"""A sequence length beyond the model's positions is refused when the task
or preprocessor is built, not at the first predict (issue 52, case 6)."""

import os

import keras_bert
from tests.checkpoints import reference_checkpoints as ref
from tests.test_case import TestCase


def tiny_backbone():
    # The reference checkpoints' size: 24 positions.
    return keras_bert.BertBackbone(
        vocabulary_size=len(ref.VOCABULARY), num_layers=1, num_heads=2,
        hidden_dim=16, intermediate_dim=32, max_sequence_length=24)


class SequenceLengthTest(TestCase):
    def test_the_task_constructor_refuses_it(self):
        preprocessor = keras_bert.BertPreprocessor(
            keras_bert.BertTokenizer(ref.VOCABULARY), sequence_length=600)
        with self.assertRaisesRegex(
                ValueError, "sequence_length=600 tokens but the backbone has "
                "max_sequence_length=24 positions"):
            keras_bert.BertClassifier(tiny_backbone(), num_classes=2,
                                      preprocessor=preprocessor)
        with self.assertRaisesRegex(ValueError, "sequence_length=600"):
            keras_bert.BertTextEmbedder(tiny_backbone(),
                                        preprocessor=preprocessor)

    def test_from_preset_refuses_it(self):
        directory = self.get_temp_dir()
        ref.make_huggingface("BertForSequenceClassification", directory)
        # The tokenizer knows the positions from config.json.
        with self.assertRaisesRegex(ValueError, "sequence_length=600 is "
                                    "more than the 24 positions"):
            keras_bert.BertPreprocessor.from_preset(directory,
                                                    sequence_length=600)
        with self.assertRaisesRegex(ValueError, "sequence_length=600"):
            keras_bert.BertClassifier.from_preset(directory,
                                                  sequence_length=600)
        # A keras_bert preset's stored preprocessor, packed longer.
        preset = os.path.join(self.get_temp_dir(), "preset")
        keras_bert.BertClassifier(
            tiny_backbone(), num_classes=2,
            preprocessor=keras_bert.BertPreprocessor(
                keras_bert.BertTokenizer(ref.VOCABULARY), sequence_length=16),
        ).save_to_preset(preset)
        with self.assertRaisesRegex(ValueError, "sequence_length=600 tokens "
                                    "but the backbone has "
                                    "max_sequence_length=24"):
            keras_bert.BertClassifier.from_preset(preset,
                                                  sequence_length=600)
        self.assertEqual(keras_bert.BertClassifier.from_preset(
            preset, sequence_length=24).preprocessor.sequence_length, 24)
