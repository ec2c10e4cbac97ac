"""Recipes fill what the command line leaves unset, and nothing else."""

import keras

from keras_bert.cli import build_parser
from keras_bert.commands.pretrain import settings_from_args
from keras_bert.models.bert_backbone import BertBackbone
from keras_bert.models.bert_pretrainer import BertPretrainer
from keras_bert.training.pretraining.pretraining_settings import RECIPES
from keras_bert.training.pretraining.pretraining_settings import (
    PretrainingSettings,
)
from keras_bert.training.pretraining.pretraining_setup import (
    build_pretrainer,
)
from keras_bert.training.pretraining.pretraining_setup import (
    compile_pretrainer,
)
from tests.test_case import TestCase


def settings(*flags):
    args = build_parser().parse_args(["pretrain", *flags])
    return settings_from_args(args).resolved()


class PretrainingSettingsTest(TestCase):
    def test_each_recipe_fills_its_settings(self):
        for name, recipe in RECIPES.items():
            resolved = PretrainingSettings(recipe=name).resolved()
            for key, value in recipe.items():
                self.assertEqual(getattr(resolved, key), value, (name, key))

    def test_the_default_is_the_budget_recipe_for_four_and_a_half_minutes(self):
        s = settings()
        self.assertEqual((s.recipe, s.minutes, s.steps), ("budget", 4.5, None))
        self.assertEqual((s.batch_size, s.sequence_length, s.mask_rate),
                         (32, 64, 0.3))
        self.assertFalse(s.next_sentence_prediction)

    def test_given_flags_beat_the_recipe(self):
        s = settings("--recipe", "bert", "--no-nsp", "--dropout", "0",
                     "--sequence-length", "32")
        self.assertEqual((s.batch_size, s.learning_rate), (256, 1e-4))
        self.assertEqual((s.dropout, s.sequence_length), (0.0, 32))
        self.assertFalse(s.next_sentence_prediction)
        self.assertTrue(settings("--nsp").next_sentence_prediction)
        self.assertTrue(settings("--recipe", "bert").next_sentence_prediction)
        self.assertEqual(settings("--mask-token-rate", "1").mask_token_rate,
                         1.0)
        self.assertEqual(settings("--initializer-range", "0.1")
                         .initializer_range, 0.1)

    def test_a_new_model_starts_at_the_recipes_scale(self):
        config = {"num_layers": 1, "num_heads": 2, "hidden_dim": 64,
                  "intermediate_dim": 128, "initializer_range": 0.3}
        spreads = {}
        for flags in ((), ("--recipe", "bert"),
                      ("--initializer-range", "0.1")):
            s = settings(*flags).replace(config=config)
            backbone = build_pretrainer(s, vocabulary_size=500,
                                        steps=10).backbone
            self.assertEqual(backbone.initializer_range, s.initializer_range)
            table = keras.ops.convert_to_numpy(
                backbone.token_embedding.embeddings)
            spreads[s.initializer_range] = float(table.std())
        # A truncated normal at two stddevs keeps 0.88 of the stddev.
        for stddev, spread in spreads.items():
            self.assertAllClose(spread, 0.88 * stddev, rtol=0.05)
        self.assertEqual(sorted(spreads), [0.02, 0.05, 0.1])

    def test_the_compiled_optimizer_takes_the_recipe_and_its_flags(self):
        backbone = BertBackbone(vocabulary_size=50, num_layers=1,
                                num_heads=2, hidden_dim=8, intermediate_dim=16)
        model = BertPretrainer(backbone)
        for flags, beta_2, peak in (((), 0.999, 2e-3),
                                    (("--recipe", "bert"), 0.999, 1e-4),
                                    (("--beta-2", "0.98"), 0.98, 2e-3)):
            compile_pretrainer(model, settings(*flags), steps=10)
            optimizer = model.optimizer
            self.assertEqual(optimizer.beta_2, beta_2, flags)
            schedule = keras.optimizers.schedules.deserialize(
                optimizer.get_config()["learning_rate"])
            self.assertEqual(schedule.peak_learning_rate, peak, flags)

    def test_steps_replace_the_time_budget(self):
        s = settings("--steps", "10")
        self.assertEqual((s.steps, s.minutes), (10, None))
        self.assertEqual(settings("--minutes", "2").minutes, 2.0)

    def test_bad_settings_are_named(self):
        with self.assertRaisesRegex(ValueError, "Unknown recipe 'fast'"):
            PretrainingSettings(recipe="fast")
        with self.assertRaisesRegex(ValueError, "steps or minutes"):
            PretrainingSettings(minutes=None)
