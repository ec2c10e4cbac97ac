import os

import keras
import numpy as np
import tensorflow as tf

from keras_bert.preprocessing import BertPreprocessor
from keras_bert.preprocessing import BertTokenizer
from tests.test_case import TestCase
from tests.test_case import to_numpy

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat",
              "sat", "it", "was", "tired", "."]
CLS, SEP = 2, 3


def preprocessor(**kwargs):
    return BertPreprocessor(BertTokenizer(VOCABULARY), **kwargs)


@keras.saving.register_keras_serializable(package="keras_bert_tests")
class HoldsPreprocessor(keras.Model):
    """A stand-in for a task model that keeps its preprocessor in config."""

    def __init__(self, preprocessor, **kwargs):
        super().__init__(**kwargs)
        self.preprocessor = preprocessor
        self.dense = keras.layers.Dense(1)

    def call(self, x):
        return self.dense(x)

    def get_config(self):
        return {**super().get_config(), "preprocessor":
                keras.saving.serialize_keras_object(self.preprocessor)}

    @classmethod
    def from_config(cls, config):
        config["preprocessor"] = keras.saving.deserialize_keras_object(
            config["preprocessor"])
        return cls(**config)


class BertPreprocessorTest(TestCase):
    def test_single_and_pair(self):
        layer = preprocessor(sequence_length=11)
        single = to_numpy(layer(["The cat sat.", "it"]))
        self.assertEqual(single["token_ids"].tolist(), [
            [CLS, 5, 6, 7, 11, SEP, 0, 0, 0, 0, 0],
            [CLS, 8, SEP, 0, 0, 0, 0, 0, 0, 0, 0]])
        pair = to_numpy(layer(("The cat sat.", "It was tired.")))
        self.assertEqual(pair["token_ids"].tolist(),
                         [CLS, 5, 6, 7, 11, SEP, 8, 9, 10, 11, SEP])
        self.assertEqual(pair["segment_ids"].tolist(),
                         [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1])
        # Dict segments are taken in sorted key order, as tf.data does.
        as_dict = to_numpy(layer({"sentence2": "It was tired.",
                                  "sentence1": "The cat sat."}))
        self.assertAllClose(as_dict, pair)

    def test_tf_data_with_labels(self):
        layer = preprocessor(sequence_length=8)
        texts = ["the cat", "it was tired .", "sat", "the"]
        self.run_preprocessing_layer_test(layer, texts)
        labels = np.array([0, 1, 1, 0])
        dataset = tf.data.Dataset.from_tensor_slices(
            ((texts, texts), labels)).batch(2).map(layer)
        x, y = next(iter(dataset))
        self.assertEqual(x["token_ids"].shape, (2, 8))
        self.assertEqual(x["segment_ids"].numpy()[1].tolist(),
                         [0, 0, 0, 0, 1, 1, 1, 1])
        self.assertEqual(y.numpy().tolist(), [0, 1])
        x, y = layer(texts[:2], labels[:2])
        self.assertEqual(to_numpy(y).tolist(), [0, 1])

    def test_dynamic_padding(self):
        layer = preprocessor(sequence_length=64, dynamic_padding=True)
        out = to_numpy(layer(["the cat", "the"]))
        self.assertEqual(out["token_ids"].shape, (2, 4))

    def test_backend_outputs_feed_a_model(self):
        layer = preprocessor(sequence_length=8)
        out = layer(["the cat sat", "it"])
        inputs = {k: keras.Input((8,), dtype="int32", name=k) for k in out}
        summed = keras.layers.Add()([keras.ops.cast(v, "float32")
                                     for v in inputs.values()])
        model = keras.Model(inputs, summed)
        self.assertEqual(tuple(model(out).shape), (2, 8))

    def test_saved_model(self):
        layer = preprocessor(sequence_length=8)
        module = tf.Module()
        module.preprocess = tf.function(
            lambda a, b: layer((a, b)),
            input_signature=[tf.TensorSpec([None], tf.string)] * 2,
        )
        path = os.path.join(self.get_temp_dir(), "saved")
        tf.saved_model.save(module, path)
        restored = tf.saved_model.load(path)
        a, b = tf.constant(["the cat sat"]), tf.constant(["it was tired"])
        self.assertAllClose(restored.preprocess(a, b), layer((a, b)))

    def test_serialization_and_keras_file(self):
        layer = preprocessor(sequence_length=12, truncate="waterfall")
        revived = self.run_serialization_test(layer)
        self.assertAllClose(revived(["the cat sat"]), layer(["the cat sat"]))
        model = HoldsPreprocessor(layer)
        model(np.zeros((1, 3), "float32"))
        path = os.path.join(self.get_temp_dir(), "model.keras")
        model.save(path)
        restored = keras.saving.load_model(path)
        self.assertEqual(restored.preprocessor.sequence_length, 12)
        self.assertEqual(restored.preprocessor.truncate, "waterfall")
        self.assertAllClose(restored.preprocessor(["the cat sat"]),
                            layer(["the cat sat"]))

    def test_from_preset(self):
        directory = os.path.join(self.get_temp_dir(), "preset")
        BertTokenizer(VOCABULARY, model_max_length=24).save_to_preset(
            directory)
        layer = BertPreprocessor.from_preset(directory)
        self.assertEqual(layer.sequence_length, 24)
        layer = BertPreprocessor.from_preset(directory, sequence_length=6)
        self.assertEqual(to_numpy(layer("the cat sat .")["token_ids"]).tolist(),
                         [CLS, 5, 6, 7, 11, SEP])

    def test_bad_inputs(self):
        with self.assertRaisesRegex(TypeError, "BertTokenizer"):
            BertPreprocessor(VOCABULARY)
        layer = preprocessor(sequence_length=8)
        with self.assertRaisesRegex(ValueError, "1 or 2 text segments"):
            layer({"a": "x", "b": "y", "c": "z"})
        with self.assertRaisesRegex(TypeError, "takes strings"):
            layer([1, 2])
