import os
import zipfile

import h5py
import keras
import numpy as np
import pytest

import keras_bert
from keras_bert.layers.fused_query_key_value import FusedQueryKeyValue
from keras_bert.training.pretraining_checkpoint import PretrainingCheckpoint
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


def _compiled_classifier():
    keras.utils.set_random_seed(3)
    model = keras_bert.BertClassifier(
        keras_bert.BertBackbone(**MODEL), num_classes=2
    )
    model.compile(
        optimizer=keras.optimizers.AdamW(1e-2),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    return model


def _fit(model, callbacks=()):
    model.fit(_inputs(), np.array([0, 1, 0, 1]), verbose=0,
              callbacks=list(callbacks))
    return model


def _query_key_value_slots(optimizer):
    return [index for index, variable in enumerate(optimizer.variables)
            if "query_key_value" in variable.path]


def _flatten_query_key_value(weights_file, model):
    """Rewrites a weights file as keras_bert wrote it with a flat kernel.

    The fused kernel was (hidden, 3 * hidden) and its bias (3 * hidden,),
    and so were the optimizer's moments of them.
    """
    optimizer = getattr(model, "optimizer", None)
    flat_slots = {f"optimizer/vars/{index}"
                  for index in (_query_key_value_slots(optimizer)
                                if optimizer else ())}
    names, flattened = [], 0
    with h5py.File(weights_file, "r+") as file:
        file.visititems(lambda name, item: names.append(name)
                        if isinstance(item, h5py.Dataset) else None)
        for name in names:
            if "query_key_value/vars" in name or name in flat_slots:
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
        self.assertEqual(_flatten_query_key_value(path, model), 4)
        with h5py.File(path) as file:
            self.assertEqual(file[KERNEL].shape, (8, 24))
        restored = keras_bert.BertBackbone(**MODEL)
        restored.load_weights(path)
        x = _inputs()
        self.assertAllClose(restored(x)["sequence_output"],
                            model(x)["sequence_output"], atol=1e-6)

    @pytest.mark.slow
    def test_flat_keras_file_loads_with_its_optimizer_state(self):
        model = _fit(_compiled_classifier())
        path = os.path.join(self.get_temp_dir(), "trained.keras")
        model.save(path)
        flat_path = os.path.join(self.get_temp_dir(), "flat.keras")
        weights = os.path.join(self.get_temp_dir(), "model.weights.h5")
        with zipfile.ZipFile(path) as source, zipfile.ZipFile(
                flat_path, "w") as target:
            for item in source.namelist():
                data = source.read(item)
                if item == "model.weights.h5":
                    with open(weights, "wb") as file:
                        file.write(data)
                    # 2 blocks x (kernel, bias) x (weight, 2 moments).
                    self.assertEqual(
                        _flatten_query_key_value(weights, model), 12
                    )
                    with open(weights, "rb") as file:
                        data = file.read()
                target.writestr(item, data)

        restored = keras.saving.load_model(flat_path)
        x = _inputs(seed=1)
        self.assertAllClose(restored.predict(x, verbose=0),
                            model.predict(x, verbose=0), atol=1e-6)
        self.assertSameOptimizerState(restored.optimizer, model.optimizer)

    @pytest.mark.slow
    def test_flat_pretraining_checkpoint_resumes(self):
        directory = os.path.join(self.get_temp_dir(), "checkpoints")
        model = _fit(_compiled_classifier(),
                     [PretrainingCheckpoint(directory, save_every=1)])
        folder = PretrainingCheckpoint.latest(directory)
        self.assertEqual(_flatten_query_key_value(
            os.path.join(folder, "model.weights.h5"), model), 12)
        npz = os.path.join(folder, "optimizer.npz")
        with np.load(npz) as saved:
            arrays = {key: saved[key] for key in saved.files}
        for index in _query_key_value_slots(model.optimizer):
            value = arrays[str(index)]
            arrays[str(index)] = value.reshape(value.shape[:-2] + (-1,))
        np.savez(npz, **arrays)

        restored = _compiled_classifier()
        self.assertEqual(
            PretrainingCheckpoint.restore(restored, directory)["step"], 1
        )
        self.assertSameOptimizerState(restored.optimizer, model.optimizer)

    def assertSameOptimizerState(self, restored, expected):
        slots = _query_key_value_slots(expected)
        self.assertEqual(len(slots), 8)  # 2 blocks x (kernel, bias) x 2
        for index in slots:
            self.assertAllClose(restored.variables[index],
                                expected.variables[index], atol=0)
        self.assertGreater(
            float(np.abs(to_numpy(expected.variables[slots[0]])).max()), 0.0
        )

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
