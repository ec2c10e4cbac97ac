"""`jit_compile="auto"` compiles keras_bert models with XLA on TensorFlow
too, where Keras would leave a CPU-only machine without it; JAX and PyTorch
keep Keras' choice (always XLA, eager). Under a `tf.distribute` strategy
Keras' choice holds. The XLA step trains the same as the graph one."""

import os

import keras
import numpy as np

from keras_bert import BertBackbone
from keras_bert import BertClassifier
from tests.test_case import TestCase
from tests.test_case import backend
from tests.test_case import skip_unless_backend

TINY = dict(vocabulary_size=60, num_layers=2, num_heads=2, hidden_dim=32,
            intermediate_dim=64, max_sequence_length=16, dropout=0.0)
# Keras' own answer to "auto" on this CPU-only machine, per backend.
KERAS_AUTO = {"jax": True, "tensorflow": False, "torch": False}


def _batch(seed=0):
    rng = np.random.default_rng(seed)
    return ({"token_ids": rng.integers(5, 60, (4, 10)).astype("int32"),
             "segment_ids": np.zeros((4, 10), "int32"),
             "padding_mask": np.ones((4, 10), "int32")},
            rng.integers(0, 2, 4).astype("int32"))


def _classifier():
    keras.utils.set_random_seed(0)
    return BertClassifier(BertBackbone(**TINY), num_classes=2, dropout=0.0,
                          preprocessor=None)


class XlaDefaultTest(TestCase):

    def test_auto_is_xla_on_tensorflow_and_keras_choice_elsewhere(self):
        expected = backend() == "tensorflow" or KERAS_AUTO[backend()]
        backbone = BertBackbone(**TINY)
        self.assertEqual(backbone.jit_compile, expected)
        model = _classifier()
        model.compile()
        self.assertEqual(model.jit_compile, expected)
        model.compile(jit_compile=False)
        self.assertFalse(model.jit_compile)

    def test_a_reloaded_task_compiles_the_same_way(self):
        model = _classifier()
        model.compile()
        path = os.path.join(self.get_temp_dir(), "model.keras")
        model.save(path)
        reloaded = keras.saving.load_model(path)
        self.assertEqual(reloaded.jit_compile, model.jit_compile)

    def test_auto_is_saved_as_auto_and_a_choice_as_itself(self):
        # A preset fine-tuned on TensorFlow saved jit_compile=True (what
        # "auto" resolved to there), and PyTorch then compiled it with
        # torch.compile on load: 43 s for a first SST-2 predict.
        for requested in ("auto", True, False):
            model = _classifier()
            model.compile(jit_compile=requested)
            path = os.path.join(self.get_temp_dir(), f"{requested}.keras")
            model.save(path)
            self.assertEqual(model.get_compile_config()["jit_compile"],
                             requested)
            reloaded = keras.saving.load_model(path)
            self.assertEqual(reloaded.get_compile_config()["jit_compile"],
                             requested)
            expected = (backend() == "tensorflow" or KERAS_AUTO[backend()]
                        if requested == "auto" else requested)
            self.assertEqual(reloaded.jit_compile, expected)

    @skip_unless_backend("tensorflow")
    def test_tf_distribute_strategy_keeps_keras_choice(self):
        import tensorflow as tf

        with tf.distribute.MirroredStrategy(["/cpu:0"]).scope():
            model = _classifier()
            model.compile()
        self.assertFalse(model.jit_compile)

    @skip_unless_backend("tensorflow")
    def test_the_xla_step_trains_like_the_graph_step(self):
        x, y = _batch()
        losses = {}
        for jit in (True, False):
            model = _classifier()
            model.compile(learning_rate=1e-3, num_train_steps=None,
                          jit_compile=jit)
            losses[jit] = [model.train_on_batch(x, y, return_dict=True)["loss"]
                           for _ in range(3)]
            self.assertEqual(model.jit_compile, jit)
        # The loss falls, and by the same steps either way.
        self.assertLess(losses[True][-1], losses[True][0])
        self.assertAllClose(losses[True], losses[False], atol=1e-4,
                            rtol=1e-4)
