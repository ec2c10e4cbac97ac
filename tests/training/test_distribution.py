"""configure_distribution, the BERT layout map and the CLI flags, in process.

The multi-device equality proofs live in test_distribution_parity.py.
"""

import argparse
import json
import types

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.training import distribution
from keras_bert.commands import distribution_arguments
from keras_bert.training.layout_map import BERT_ACTIVATION_SHARDING
from keras_bert.training.layout_map import BERT_SHARDING
from keras_bert.training.layout_map import bert_layout_map
from tests.test_case import TestCase
from tests.test_case import skip_unless_backend


def mesh(shape=(2, 4), axis_names=("batch", "model")):
    count = int(np.prod(shape))
    return keras.distribution.DeviceMesh(
        shape, axis_names, [f"cpu:{i}" for i in range(count)]
    )


class BertLayoutMapTest(TestCase):
    def test_every_rule_matches_and_the_rest_is_replicated(self):
        backbone = keras_bert.BertBackbone(
            vocabulary_size=40, num_layers=2, num_heads=2, hidden_dim=8,
            intermediate_dim=16, max_sequence_length=8,
        )
        model = keras_bert.BertPretrainer(backbone)
        layout_map = bert_layout_map(mesh())
        # A lookup raises when a path matches two rules.
        layouts = {w.path: layout_map[w.path] for w in model.weights}
        sharded = {
            path: layout.axes for path, layout in layouts.items()
            if layout is not None
        }
        expected = {}
        for i in range(2):
            block = f"transformer_layer_{i}"
            expected.update({
                f"{block}/attention/query_key_value/kernel":
                    (None, None, "model"),
                f"{block}/attention/query_key_value/bias": (None, "model"),
                f"{block}/attention/output_dense/kernel": ("model", None),
                f"{block}/intermediate_dense/kernel": (None, "model"),
                f"{block}/intermediate_dense/bias": ("model",),
                f"{block}/output_dense/kernel": ("model", None),
            })
        expected["embeddings/token_embedding/embeddings"] = (None, "model")
        expected["embeddings/position_embeddings"] = (None, "model")
        self.assertEqual(sharded, expected)
        # Each shard axis names a real dimension of its weight.
        for weight in model.weights:
            if weight.path in sharded:
                self.assertEqual(len(sharded[weight.path]), len(weight.shape))
        self.assertEqual(len(BERT_SHARDING), 8)

    def test_activations_are_whole_along_hidden(self):
        layout_map = bert_layout_map(mesh())
        for path in ("embeddings/output",
                     "transformer_layer_1/attention/output_dense/output",
                     "bert_backbone/transformer_layer_0/output_dense/output"):
            self.assertEqual(layout_map[path].axes, ("batch", None, None))
        for path in ("transformer_layer_0/attention/output",
                     "transformer_layer_0/intermediate_dense/output"):
            self.assertIsNone(layout_map[path])
        self.assertEqual(len(BERT_ACTIVATION_SHARDING), 3)

    def test_custom_axes_and_missing_axis(self):
        layout_map = bert_layout_map(mesh(axis_names=("data", "tp")), "tp")
        self.assertEqual(
            layout_map["x/transformer_layer_3/output_dense/kernel"].axes,
            ("tp", None),
        )
        self.assertEqual(
            layout_map["x/transformer_layer_3/output_dense/output"].axes,
            ("data", None, None),
        )
        with self.assertRaisesRegex(ValueError, "'model'"):
            bert_layout_map(mesh(axis_names=("data", "tp")))
        one_axis = keras.distribution.DeviceMesh((8,), ("model",),
                                                 [f"cpu:{i}" for i in range(8)])
        self.assertEqual(
            bert_layout_map(one_axis)["embeddings/output"].axes,
            (None, None, None),
        )
        three_axes = mesh((2, 2, 2), ("replica", "data", "model"))
        with self.assertRaisesRegex(ValueError, "pass data_axis="):
            bert_layout_map(three_axes)
        self.assertEqual(
            bert_layout_map(three_axes, data_axis="data")[
                "embeddings/output"].axes,
            ("data", None, None),
        )
        with self.assertRaisesRegex(ValueError, "data_axis='model'"):
            bert_layout_map(mesh(), data_axis="model")


class ArgumentsTest(TestCase):
    def parse(self, *argv):
        parser = argparse.ArgumentParser()
        distribution_arguments.add_distribution_arguments(parser)
        return parser.parse_args(list(argv))

    def test_flags(self):
        args = self.parse("--distribution", "model_parallel",
                          "--mesh-shape", "2,4")
        self.assertEqual(args.distribution, "model_parallel")
        self.assertEqual(args.mesh_shape, (2, 4))
        self.assertFalse(args.multi_host)
        self.assertIsNone(args.tpu)
        self.assertEqual(self.parse("--mesh-shape", "8").mesh_shape, (8,))
        self.assertIsNone(distribution_arguments.distribution_from_args(self.parse()))

    def test_bad_flags(self):
        for value in ("2x4", "0,4", "1,2,3", ""):
            with self.assertRaises(argparse.ArgumentTypeError):
                distribution_arguments.parse_mesh_shape(value)
        with self.assertRaises(SystemExit):
            self.parse("--distribution", "pipeline")


class ConfigureDistributionTest(TestCase):
    def test_no_distribution(self):
        self.assertIsNone(distribution.configure_distribution(None))
        self.assertEqual(distribution.num_replicas(None), 1)
        self.assertEqual(distribution.global_batch_size(32, None), 32)
        self.assertTrue(distribution.is_chief(None))
        with distribution.distribution_scope(None):
            pass

    def test_argument_errors(self):
        configure = distribution.configure_distribution
        with self.assertRaisesRegex(ValueError, "Unknown distribution kind"):
            configure("pipeline_parallel")
        with self.assertRaisesRegex(ValueError, "without a distribution kind"):
            configure(None, mesh_shape=(2, 4))
        other = "jax" if keras.config.backend() != "jax" else "torch"
        with self.assertRaisesRegex(ValueError, f"KERAS_BACKEND={other}"):
            configure("data_parallel", backend=other)
        with self.assertRaisesRegex(ValueError, "one axis"):
            configure("data_parallel", mesh_shape=(2, 4))

    @skip_unless_backend("torch")
    def test_torch_says_what_keras_supports(self):
        for kind in distribution.KINDS:
            with self.assertRaisesRegex(
                ValueError, "DistributedDataParallel.*KERAS_BACKEND=jax"
            ):
                distribution.configure_distribution(kind)
        with self.assertRaisesRegex(ValueError, "jax or tensorflow"):
            distribution.use_virtual_cpu_devices(2)

    @skip_unless_backend("jax")
    def test_jax_engines(self):
        import jax

        count = len(jax.devices())
        engine = distribution.configure_distribution("data_parallel")
        self.assertIsInstance(engine, keras.distribution.DataParallel)
        self.assertEqual(distribution.num_replicas(engine), count)
        self.assertEqual(distribution.global_batch_size(4, engine), 4 * count)
        engine = distribution.configure_distribution("model_parallel")
        self.assertIsInstance(engine, keras.distribution.ModelParallel)
        self.assertEqual(engine.device_mesh.shape, (1, count))
        with self.assertRaisesRegex(ValueError, f"needs {count + 1} devices"):
            distribution.configure_distribution(
                "model_parallel", mesh_shape=(1, count + 1)
            )
        with self.assertRaisesRegex(ValueError, "drop --tpu"):
            distribution.configure_distribution("data_parallel", tpu="local")
        with self.assertRaisesRegex(RuntimeError, "already started"):
            distribution.use_virtual_cpu_devices(count + 1)

    @skip_unless_backend("tensorflow")
    def test_tensorflow_engines(self):
        engine = distribution.configure_distribution("data_parallel")
        self.assertIsInstance(engine, tf.distribute.MirroredStrategy)
        count = engine.num_replicas_in_sync
        self.assertEqual(distribution.num_replicas(engine), count)
        with self.assertRaisesRegex(ValueError, "KERAS_BACKEND=jax"):
            distribution.configure_distribution("model_parallel", (1, 2))
        with self.assertRaisesRegex(ValueError, f"needs {count + 1} devices"):
            distribution.configure_distribution("data_parallel", (count + 1,))
        with self.assertRaisesRegex(ValueError, "needs TF_CONFIG"):
            distribution.configure_distribution(
                "data_parallel", multi_host=True
            )
        with self.assertRaisesRegex(RuntimeError, "already started"):
            distribution.use_virtual_cpu_devices(
                len(tf.config.list_logical_devices("CPU")) + 1
            )

    @skip_unless_backend("tensorflow")
    def test_tf_config_errors(self):
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("TF_CONFIG", "{not json")
            with self.assertRaisesRegex(ValueError, "TF_CONFIG is not a JSON"):
                distribution.configure_distribution("data_parallel")
            patch.setenv("TF_CONFIG", json.dumps({"cluster": {}}))
            self.assertIsInstance(
                distribution.configure_distribution("data_parallel"),
                tf.distribute.MirroredStrategy,
            )


class DistributeDatasetTest(TestCase):
    def examples(self, count=10):
        return tf.data.Dataset.from_tensor_slices(
            {"token_ids": np.arange(count * 3).reshape(count, 3)}
        )

    def test_global_batches_from_examples(self):
        two_replicas = types.SimpleNamespace(num_replicas_in_sync=2)
        dataset = distribution.distribute_dataset(
            self.examples(), two_replicas, per_replica_batch_size=2
        )
        batches = [batch["token_ids"].numpy() for batch in dataset]
        # Global batch 4; the last 2 examples cannot fill one and are dropped.
        self.assertEqual([b.shape for b in batches], [(4, 3), (4, 3)])
        np.testing.assert_array_equal(batches[1][0], [12, 13, 14])
        self.assertEqual(
            dataset.options().experimental_distribute.auto_shard_policy,
            tf.data.experimental.AutoShardPolicy.DATA,
        )

    def test_batched_input_is_checked(self):
        three_replicas = types.SimpleNamespace(num_replicas_in_sync=3)
        batched = self.examples(12).batch(6, drop_remainder=True)
        dataset = distribution.distribute_dataset(batched, three_replicas)
        self.assertEqual(dataset.element_spec["token_ids"].shape[0], 6)
        for bad in (self.examples(12).batch(6), self.examples(12).batch(4, True)):
            with self.assertRaisesRegex(ValueError, "divisible by 3"):
                distribution.distribute_dataset(bad, three_replicas)
