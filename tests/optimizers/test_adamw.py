import os
import warnings

import keras
import numpy as np

from keras_bert.optimizers.adamw import AdamW
from keras_bert.optimizers.bert_optimizer import create_optimizer
from tests.test_case import TestCase


def torch_adamw_steps(start, gradients, lr, weight_decay, epsilon,
                      beta_1=0.9, beta_2=0.999):
    """`torch.optim.AdamW`'s update, in NumPy: epsilon after correction."""
    x, m, v = start.copy(), np.zeros_like(start), np.zeros_like(start)
    for t, g in enumerate(gradients, 1):
        x = x * (1 - lr * weight_decay)
        m = beta_1 * m + (1 - beta_1) * g
        v = beta_2 * v + (1 - beta_2) * g * g
        m_hat, v_hat = m / (1 - beta_1**t), v / (1 - beta_2**t)
        x = x - lr * m_hat / (np.sqrt(v_hat) + epsilon)
    return x


class AdamWTest(TestCase):
    def test_matches_pytorch_adamw_for_small_gradients(self):
        # Gradients of 1e-7 to 1e-3, the scale of clipped BERT gradients:
        # where Keras' AdamW puts epsilon (before the bias correction) its
        # first steps are up to 30x smaller than PyTorch's.
        rng = np.random.default_rng(0)
        # Small weights: float32 resolves their updates to 1e-9.
        start = (0.01 * rng.normal(size=(4, 5))).astype("float32")
        scale = np.logspace(-7, -3, 5, dtype="float32")
        gradients = [(rng.normal(size=(4, 5)) * scale).astype("float32")
                     for _ in range(5)]
        # The fine-tuning recipe's optimizer, without warmup or clipping.
        optimizer = create_optimizer(total_steps=5, learning_rate=1e-3,
                                     warmup_steps=0, weight_decay=0.01,
                                     global_clipnorm=None,
                                     end_learning_rate=1e-3)
        self.assertIsInstance(optimizer, AdamW)
        variable = keras.Variable(start)
        for gradient in gradients:
            optimizer.apply_gradients(
                [(keras.ops.convert_to_tensor(gradient), variable)])
        expected = torch_adamw_steps(start, gradients, lr=1e-3,
                                     weight_decay=0.01, epsilon=1e-6)
        moved, wanted = (keras.ops.convert_to_numpy(variable) - start,
                         expected - start)
        self.assertAllClose(moved, wanted, rtol=1e-4, atol=1e-9)

    def test_every_variable_takes_its_own_step_on_a_schedule(self):
        # Several variables in one update (PyTorch updates them all with
        # multi-tensor kernels), one kept out of weight decay by name, and
        # a learning rate that changes every step.
        rng = np.random.default_rng(1)
        starts = {"kernel": rng.normal(size=(6, 3)).astype("float32"),
                  "bias": rng.normal(size=(3,)).astype("float32")}
        steps = 4
        gradients = [{name: (1e-3 * rng.normal(size=start.shape))
                      .astype("float32") for name, start in starts.items()}
                     for _ in range(steps)]
        optimizer = create_optimizer(total_steps=steps, learning_rate=1e-2,
                                     warmup_steps=1, weight_decay=0.1,
                                     global_clipnorm=None)
        variables = {name: keras.Variable(start, name=name)
                     for name, start in starts.items()}
        rates = []
        for step in gradients:
            rates.append(float(optimizer.learning_rate))
            optimizer.apply_gradients(
                [(keras.ops.convert_to_tensor(step[name]), variables[name])
                 for name in starts])
        for name, decay in (("kernel", 0.1), ("bias", 0.0)):
            x, m, v = starts[name].copy(), 0.0, 0.0
            for t, (rate, step) in enumerate(zip(rates, gradients), 1):
                g = step[name]
                x = x * (1 - rate * decay)
                m = 0.9 * m + 0.1 * g
                v = 0.999 * v + 0.001 * g * g
                x = x - rate * (m / (1 - 0.9**t)) / (
                    np.sqrt(v / (1 - 0.999**t)) + 1e-6)
            self.assertAllClose(variables[name], x, rtol=1e-5, atol=1e-7)

    def test_serialization_round_trip(self):
        optimizer = AdamW(learning_rate=1e-3, weight_decay=0.01, epsilon=1e-6)
        revived = keras.optimizers.deserialize(
            keras.optimizers.serialize(optimizer))
        self.assertIsInstance(revived, AdamW)
        self.assertEqual(revived.get_config(), optimizer.get_config())

    def test_weight_decay_exclusions_survive_the_config(self):
        # Keras' own config drops them: a loaded model decayed LayerNorm.
        optimizer = create_optimizer(total_steps=10, learning_rate=0.1,
                                     warmup_steps=0)
        revived = keras.optimizers.deserialize(
            keras.optimizers.serialize(optimizer))
        gamma = keras.Variable(np.ones(3, "float32"), name="gamma")
        kernel = keras.Variable(np.ones(3, "float32"), name="kernel")
        zero = keras.ops.zeros(3)
        revived.apply_gradients([(zero, gamma), (zero, kernel)])
        self.assertAllClose(gamma, np.ones(3))
        # Decayed: 1 - 0.1 x 0.01.
        self.assertAllClose(kernel, np.full(3, 0.999), atol=1e-6)

    def _saved_and_loaded(self, model):
        path = os.path.join(self.get_temp_dir(), "model.keras")
        model.save(path)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            loaded = keras.saving.load_model(path)
        self.assertEqual(
            [str(w.message) for w in caught if "optimizer" in str(w.message)],
            [])
        return loaded

    def _compiled_model(self):
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
        model.compile(optimizer=AdamW(learning_rate=1e-2), loss="mse")
        return model

    def test_a_model_saved_before_its_first_step_loads_quietly(self):
        # Tasks come compiled: one saved untrained has an unbuilt optimizer.
        loaded = self._saved_and_loaded(self._compiled_model())
        self.assertTrue(loaded.optimizer.built)
        self.assertEqual(int(loaded.optimizer.iterations), 0)
        x, y = np.ones((4, 3), "float32"), np.zeros((4, 2), "float32")
        loaded.train_on_batch(x, y)
        self.assertEqual(int(loaded.optimizer.iterations), 1)

    def test_a_trained_optimizer_state_round_trips(self):
        model = self._compiled_model()
        x, y = np.ones((4, 3), "float32"), np.zeros((4, 2), "float32")
        model.train_on_batch(x, y)
        model.train_on_batch(x, y)
        loaded = self._saved_and_loaded(model)
        self.assertEqual(int(loaded.optimizer.iterations), 2)
        for saved, revived in zip(model.optimizer.variables,
                                  loaded.optimizer.variables):
            self.assertAllClose(revived, saved)
