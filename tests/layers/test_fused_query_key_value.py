import os

import h5py
import numpy as np

import keras_bert
from keras_bert.layers.fused_query_key_value import FusedQueryKeyValue
from tests.test_case import TestCase
from tests.test_case import to_numpy

MODEL = dict(vocabulary_size=40, num_layers=2, num_heads=2, hidden_dim=8,
             intermediate_dim=16, max_sequence_length=8, dropout=0.0)
# The first block's fused kernel in a `BertBackbone` weights file.
KERNEL = "layers/transformer_encoder_block/attention/query_key_value/vars/0"


def _inputs(batch=4, seed=0):
    rng = np.random.default_rng(seed)
    return {
        "token_ids": rng.integers(1, 40, (batch, 8)).astype("int32"),
        "segment_ids": np.zeros((batch, 8), "int32"),
        "padding_mask": np.ones((batch, 8), "int32"),
    }


def _flatten_query_key_value(weights_file):
    """Rewrites a weights file as keras_bert wrote it with a flat kernel:
    (hidden, 3 * hidden), and its bias (3 * hidden,)."""
    names, flattened = [], 0
    with h5py.File(weights_file, "r+") as file:
        file.visititems(lambda name, item: names.append(name)
                        if isinstance(item, h5py.Dataset) else None)
        for name in names:
            if "query_key_value/vars" in name:
                value = file[name][()]
                del file[name]
                file[name] = value.reshape(value.shape[:-2] + (-1,))
                flattened += 1
    return flattened


class FusedQueryKeyValueTest(TestCase):
    def test_layer_basics(self):
        x = np.random.default_rng(0).normal(size=(2, 5, 8)).astype("float32")
        layer = self.run_layer_test(
            FusedQueryKeyValue, {"hidden_dim": 8}, x,
            expected_output_shape=(2, 5, 3, 8),
            expected_num_trainable_weights=2,
        )
        kernel, bias = (to_numpy(w) for w in (layer.kernel, layer.bias))
        # The same GEMM as a flat (hidden, 3 * hidden) Dense.
        flat = x @ kernel.reshape(8, 24) + bias.reshape(24)
        self.assertAllClose(layer(x), flat.reshape(2, 5, 3, 8), atol=1e-5)

    def test_flat_weights_file_loads(self):
        model = keras_bert.BertBackbone(**MODEL)
        path = os.path.join(self.get_temp_dir(), "flat.weights.h5")
        model.save_weights(path)
        self.assertEqual(_flatten_query_key_value(path), 4)
        with h5py.File(path) as file:
            self.assertEqual(file[KERNEL].shape, (8, 24))
        restored = keras_bert.BertBackbone(**MODEL)
        restored.load_weights(path)
        x = _inputs()
        self.assertAllClose(restored(x)["sequence_output"],
                            model(x)["sequence_output"], atol=1e-6)

    def test_other_shapes_still_fail_loudly(self):
        model = keras_bert.BertBackbone(**MODEL)
        path = os.path.join(self.get_temp_dir(), "bad.weights.h5")
        model.save_weights(path)
        with h5py.File(path, "r+") as file:
            value = file[KERNEL][()]
            del file[KERNEL]
            file[KERNEL] = value[:, :, :4]
        with self.assertRaisesRegex(ValueError, "shape"):
            keras_bert.BertBackbone(**MODEL).load_weights(path)
