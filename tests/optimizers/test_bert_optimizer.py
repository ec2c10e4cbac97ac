import keras
import numpy as np

from keras_bert.models.bert_backbone import BertBackbone
from keras_bert.models.bert_pretrainer import BertPretrainer
from keras_bert.optimizers.adamw import AdamW
from keras_bert.optimizers.bert_optimizer import create_optimizer
from keras_bert.optimizers.warmup_linear_decay import WarmupLinearDecay
from tests.test_case import TestCase


def tiny_pretrainer():
    backbone = BertBackbone(vocabulary_size=50, num_layers=1, num_heads=2,
                            hidden_dim=8, intermediate_dim=16)
    return BertPretrainer(backbone)


class CreateOptimizerTest(TestCase):
    def test_weight_decay_skips_layer_norm_and_biases(self):
        model = tiny_pretrainer()
        optimizer = create_optimizer(total_steps=10, learning_rate=0.1,
                                     warmup_steps=0, weight_decay=0.5)
        variables = model.trainable_variables
        before = [keras.ops.convert_to_numpy(v) for v in variables]
        # Zero gradients: Adam's step is 0, so only the decay moves weights.
        optimizer.apply_gradients(
            [(keras.ops.zeros(v.shape, dtype=v.dtype), v) for v in variables]
        )
        decayed = kept = 0
        for variable, old in zip(variables, before):
            new = keras.ops.convert_to_numpy(variable)
            if "layer_norm" in variable.path or "bias" in variable.name:
                np.testing.assert_array_equal(new, old, err_msg=variable.path)
                kept += 1
            else:
                np.testing.assert_allclose(new, old * (1 - 0.1 * 0.5),
                                           rtol=1e-6, err_msg=variable.path)
                decayed += 1
        # Both groups exist: kernels/embeddings and LayerNorm/biases.
        self.assertGreater(decayed, 5)
        self.assertGreater(kept, 5)

    def test_paper_defaults_and_scaled_warmup(self):
        optimizer = create_optimizer(total_steps=5000)
        self.assertIsInstance(optimizer, AdamW)
        self.assertEqual(optimizer.weight_decay, 0.01)
        self.assertEqual(optimizer.global_clipnorm, 1.0)
        self.assertEqual(optimizer.beta_2, 0.999)
        self.assertEqual(create_optimizer(total_steps=10,
                                          beta_2=0.98).beta_2, 0.98)
        schedule = keras.optimizers.schedules.deserialize(
            optimizer.get_config()["learning_rate"])
        self.assertIsInstance(schedule, WarmupLinearDecay)
        self.assertEqual(schedule.peak_learning_rate, 1e-4)
        self.assertEqual(schedule.warmup_steps, 50)  # 10k of 1M, scaled

    def test_lamb(self):
        optimizer = create_optimizer(total_steps=100, optimizer="lamb")
        self.assertIsInstance(optimizer, keras.optimizers.Lamb)
        with self.assertRaisesRegex(ValueError, "'sgd'"):
            create_optimizer(total_steps=100, optimizer="sgd")
