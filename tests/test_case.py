"""Shared test base: every test in the suite builds on these helpers.

Each helper checks one property the way a user would meet it: a layer builds
and runs with the right shapes and dtypes, its config round-trips, a `.keras`
file reloads with identical outputs, a preprocessing layer gives the same
result eagerly and inside `tf.data`, and mixed precision runs finitely.
"""

import contextlib
import copy
import os
import shutil
import tempfile
import unittest
import warnings

import keras
import numpy as np
import pytest
from keras import ops


def to_numpy(x):
    """Converts a (nested) structure of backend/TF tensors to NumPy."""

    def convert(value):
        if value is None:
            return None
        if hasattr(value, "to_list"):  # tf.RaggedTensor
            return value.to_list()
        if hasattr(value, "numpy") and not isinstance(value, np.ndarray):
            try:
                return value.numpy()
            except Exception:  # torch tensors that need .detach()
                pass
        return ops.convert_to_numpy(value)

    return keras.tree.map_structure(convert, x)


def backend():
    return keras.config.backend()


def skip_unless_backend(*names):
    """Marks a test as meaningful only under the given Keras backends."""
    return pytest.mark.skipif(
        keras.config.backend() not in names,
        reason=f"needs KERAS_BACKEND in {names}",
    )


# Set to 1 to run every end-to-end script test under each backend.
EVERY_BACKEND_VARIABLE = "KERAS_BERT_TEST_EVERY_BACKEND"


def script_runs_under(name):
    """Runs an end-to-end script test (an example, a guide) under backend
    `name` only, unless KERAS_BERT_TEST_EVERY_BACKEND=1.

    Such a script spends most of its time starting a process and compiling
    models, and what it does per backend (fit, predict, save, export) the
    unit tests check under every backend; spreading the scripts over the
    three test passes keeps each one tested on every commit and CI in its
    time budget on 2 cores.
    """
    every = os.environ.get(EVERY_BACKEND_VARIABLE) == "1"
    return pytest.mark.skipif(
        not every and keras.config.backend() != name,
        reason=f"runs in the {name} pass ({EVERY_BACKEND_VARIABLE}=1: "
               "every pass)",
    )


class TestCase(unittest.TestCase):
    """Base class with layer, serialization, saving and tf.data helpers."""

    def setUp(self):
        super().setUp()
        keras.config.set_dtype_policy("float32")
        keras.utils.set_random_seed(1337)

    def tearDown(self):
        keras.config.set_dtype_policy("float32")
        keras.backend.clear_session()
        super().tearDown()

    def get_temp_dir(self):
        path = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, path, ignore_errors=True)
        return path

    def assertAllClose(self, actual, expected, atol=1e-6, rtol=1e-6, msg=None):
        actual, expected = to_numpy(actual), to_numpy(expected)
        keras.tree.assert_same_structure(actual, expected)
        for a, e in zip(keras.tree.flatten(actual), keras.tree.flatten(expected)):
            np.testing.assert_allclose(
                np.asarray(a, dtype="float64") if np.asarray(a).dtype.kind == "f" else a,
                np.asarray(e, dtype="float64") if np.asarray(e).dtype.kind == "f" else e,
                atol=atol,
                rtol=rtol,
                err_msg=msg or "",
            )

    @contextlib.contextmanager
    def assertNoWarningAbout(self, text):
        """Fails if the block warns with `text` in the message."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield
        self.assertEqual([str(w.message) for w in caught
                          if text in str(w.message)], [])

    def assertAllFinite(self, x):
        for value in keras.tree.flatten(to_numpy(x)):
            value = np.asarray(value, dtype="float32")
            self.assertTrue(np.all(np.isfinite(value)), "non-finite values")

    def assertPaddedToBuckets(self, batches, rows, buckets):
        """Each of `batches` (packed input dicts a model ran on) has `rows`
        rows and is as wide as one of `buckets`, every bucket used; on
        eager PyTorch, which compiles no shape
        (`bucketed_inference.compiles_no_shapes`), as wide as its longest
        row instead: its last position holds a real token."""
        widths = set()
        for batch in batches:
            mask = to_numpy(batch["padding_mask"])
            self.assertEqual(mask.shape[0], rows)
            widths.add(mask.shape[1])
            if backend() == "torch":
                self.assertTrue(mask[:, -1].any(), "a column of padding")
        if backend() == "torch":
            self.assertLessEqual(max(widths), max(buckets))
        else:
            self.assertEqual(widths, set(buckets))

    # Serialization -------------------------------------------------------

    def run_serialization_test(self, instance):
        """`get_config`/`from_config` and `serialize_keras_object` round trips."""
        config = instance.get_config()
        revived = instance.__class__.from_config(config)
        self.assertEqual(config, revived.get_config())

        serialized = keras.saving.serialize_keras_object(instance)
        # A copy: Keras deserializes an optimizer's schedule in place.
        revived = keras.saving.deserialize_keras_object(
            copy.deepcopy(serialized))
        self.assertEqual(type(revived), type(instance))
        self.assertEqual(
            keras.saving.serialize_keras_object(revived), serialized
        )
        return revived

    def run_model_saving_test(self, model, input_data, atol=1e-6):
        """Saves to `.keras`, reloads, and checks outputs are identical."""
        expected = model(input_data)
        path = os.path.join(self.get_temp_dir(), "model.keras")
        model.save(path)
        restored = keras.saving.load_model(path)
        self.assertEqual(type(restored), type(model))
        self.assertAllClose(restored(input_data), expected, atol=atol, rtol=0)
        return restored

    # Layers --------------------------------------------------------------

    def run_layer_test(
        self,
        cls,
        init_kwargs,
        input_data,
        expected_output_shape,
        expected_output_dtype="float32",
        call_kwargs=None,
        expected_num_trainable_weights=None,
        run_mixed_precision=True,
    ):
        """Builds and calls a layer; checks shapes, dtypes, config and policies.

        Args:
            cls: the layer class.
            init_kwargs: dict, constructor arguments.
            input_data: a tensor or a dict/tuple of tensors (first argument).
            expected_output_shape: a shape tuple, or a structure of them.
            expected_output_dtype: dtype of every output under float32.
            call_kwargs: extra keyword arguments for `call`.
            expected_num_trainable_weights: checked when given.
            run_mixed_precision: also run under `mixed_float16` and
                `mixed_bfloat16` and check outputs are finite.
        """
        call_kwargs = call_kwargs or {}
        layer = cls(**init_kwargs)
        output = layer(input_data, **call_kwargs)
        shapes = keras.tree.map_structure(
            lambda x: tuple(x.shape), output
        )
        self.assertEqual(shapes, expected_output_shape)
        for value in keras.tree.flatten(output):
            self.assertEqual(keras.backend.standardize_dtype(value.dtype),
                             expected_output_dtype)
        if expected_num_trainable_weights is not None:
            self.assertEqual(len(layer.trainable_weights),
                           expected_num_trainable_weights)
        self.assertTrue(layer.built)

        revived = self.run_serialization_test(layer)
        revived(input_data, **call_kwargs)
        revived.set_weights(layer.get_weights())
        self.assertAllClose(
            revived(input_data, **call_kwargs), output, atol=1e-6
        )

        if run_mixed_precision:
            self.run_mixed_precision_test(cls, init_kwargs, input_data,
                                          call_kwargs)
        return layer

    def run_mixed_precision_test(self, cls, init_kwargs, input_data,
                                 call_kwargs=None):
        """Runs under both mixed policies: compute dtype out, float32 vars."""
        for policy in ("mixed_float16", "mixed_bfloat16"):
            layer = cls(**{**init_kwargs, "dtype": policy})
            output = layer(input_data, **(call_kwargs or {}))
            compute = policy.split("_")[1]
            for value in keras.tree.flatten(output):
                if keras.backend.is_float_dtype(value.dtype):
                    self.assertEqual(
                        keras.backend.standardize_dtype(value.dtype), compute
                    )
            for weight in layer.weights:
                self.assertEqual(weight.dtype, "float32")
            self.assertAllFinite(output)

    # Preprocessing -------------------------------------------------------

    def run_preprocessing_layer_test(self, layer, input_data,
                                     expected_output=None, batch_size=2):
        """Same result eagerly and in `tf.data.Dataset.map`; config round trip.

        `input_data` is a batch (list/array of strings, or a dict of them).
        """
        import tensorflow as tf

        eager = to_numpy(layer(input_data))
        if expected_output is not None:
            self.assertAllClose(eager, expected_output)

        ds = tf.data.Dataset.from_tensor_slices(input_data).batch(batch_size)
        ds = ds.map(layer, num_parallel_calls=tf.data.AUTOTUNE)
        pieces = [to_numpy(batch) for batch in ds]
        merged = keras.tree.map_structure(
            lambda *xs: np.concatenate(xs, axis=0)
            if isinstance(xs[0], np.ndarray)
            else sum((list(x) for x in xs), []),
            *pieces,
        )
        self.assertAllClose(merged, eager)

        revived = layer.__class__.from_config(layer.get_config())
        self.assertAllClose(to_numpy(revived(input_data)), eager)
        return eager

    # Models --------------------------------------------------------------

    def run_backbone_test(self, cls, init_kwargs, input_data,
                          expected_output_shape, run_mixed_precision=True,
                          run_saving=True):
        """Backbone: shapes, serialization, `.keras` round trip, policies."""
        model = cls(**init_kwargs)
        output = model(input_data)
        self.assertEqual(
            {k: tuple(v.shape) for k, v in output.items()
             if not isinstance(v, (list, tuple))},
            expected_output_shape,
        )
        self.run_serialization_test(model)
        if run_saving:
            self.run_model_saving_test(model, input_data)
        if run_mixed_precision:
            for policy in ("mixed_float16", "mixed_bfloat16"):
                mixed = cls(**{**init_kwargs, "dtype": policy})
                mixed.set_weights(model.get_weights())
                out = mixed(input_data)
                self.assertAllFinite(out)
        return model
