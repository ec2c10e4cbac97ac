"""LoRA on the backbone (`BertBackbone.enable_lora`), on every backend.

What is checked: the outputs do not move when LoRA is switched on (B
starts at zero); only the adapters (and a task's heads) train, the frozen
kernels stay bit for bit what they were; each role adapts its own layers;
bad arguments, a second call and quantized models are refused by name;
the recipe's default rate is LoRA's once adapters train; and every way of
saving writes the merged model: a reloaded `.keras` file, a preset and a
Hugging Face directory (read by `transformers`) give the adapted model's
outputs.
"""

import os

import keras
import numpy as np

from keras_bert import BertBackbone
from keras_bert import BertClassifier
from keras_bert.optimizers.finetune_recipe import LORA_LEARNING_RATE
from tests.checkpoints import reference_checkpoints as ref
from tests.models.tiny_models import TINY
from tests.models.tiny_models import move_lora_adapters
from tests.models.tiny_models import packed_inputs
from tests.test_case import TestCase
from tests.test_case import skip_unless_backend
from tests.test_case import to_numpy


def _sequence(model, inputs):
    return to_numpy(model(inputs)["sequence_output"])


def _weight_names(weights):
    return sorted(weight.path for weight in weights)


class LoraTest(TestCase):

    def test_outputs_are_unchanged_until_the_adapters_move(self):
        keras.utils.set_random_seed(0)
        model = BertBackbone(**TINY)
        inputs = packed_inputs(batch=8)
        before = _sequence(model, inputs)
        model.enable_lora(4)
        self.assertAllClose(_sequence(model, inputs), before, atol=0, rtol=0)
        move_lora_adapters(model)
        self.assertGreater(np.abs(_sequence(model, inputs) - before).max(),
                           1e-3)

    def test_only_the_adapters_train(self):
        model = BertBackbone(**TINY)
        model.enable_lora(4)
        self.assertEqual(_weight_names(model.trainable_weights), sorted(
            f"transformer_layer_{i}/attention/query_key_value/lora_kernel_{p}"
            for i in range(2) for p in "ab"))
        qkv = model.get_layer("transformer_layer_0").attention.query_key_value
        self.assertEqual(tuple(qkv.lora_kernel_a.shape), (32, 3, 4))
        self.assertEqual(tuple(qkv.lora_kernel_b.shape), (4, 32))

    def test_each_role_adapts_its_own_layers(self):
        model = BertBackbone(**TINY)
        model.enable_lora(2, target_names=("attention_output",
                                           "intermediate", "output"),
                          lora_alpha=4)
        layers = sorted({w.path.rsplit("/", 1)[0]
                         for w in model.trainable_weights})
        self.assertEqual(layers, sorted(
            f"transformer_layer_{i}/{name}" for i in range(2) for name in (
                "attention/output_dense", "intermediate_dense",
                "output_dense")))
        dense = model.get_layer("transformer_layer_1").intermediate_dense
        self.assertEqual((dense.lora_rank, dense.lora_alpha), (2, 4))

    def test_classifier_trains_adapters_and_head_only(self):
        keras.utils.set_random_seed(3)
        model = BertClassifier(BertBackbone(**TINY), num_classes=2)
        model.backbone.enable_lora(4)
        frozen = {w.path: to_numpy(w).copy()
                  for w in model.backbone.non_trainable_weights}
        trained = {w.path: to_numpy(w).copy() for w in model.trainable_weights}
        self.assertEqual(_weight_names(model.trainable_weights)[:2], [
            "classifier_head/bias", "classifier_head/kernel"])
        inputs = packed_inputs(batch=16)
        labels = (inputs["token_ids"][:, 1] % 2).astype("int32")
        model.compile(learning_rate=1e-2)
        model.fit(inputs, labels, batch_size=8, epochs=2, verbose=0)
        for weight in model.backbone.non_trainable_weights:
            self.assertAllClose(to_numpy(weight), frozen[weight.path],
                                atol=0, rtol=0, msg=weight.path)
        for weight in model.trainable_weights:
            if not weight.path.endswith("lora_kernel_a"):
                self.assertFalse(
                    np.array_equal(to_numpy(weight), trained[weight.path]),
                    weight.path)

    def test_the_recipe_rate_follows_lora(self):
        model = BertClassifier(BertBackbone(**TINY), num_classes=2)
        self.assertEqual(model.optimizer._learning_rate.peak_learning_rate,
                         5e-5)
        # Enabled after the task compiled itself: the first fit, which
        # sizes the schedule, picks the LoRA rate.
        model.backbone.enable_lora(4)
        inputs = packed_inputs(batch=8)
        model.fit(inputs, np.zeros(8, "int32"), batch_size=8, verbose=0)
        schedule = model.optimizer._learning_rate
        self.assertEqual((schedule.peak_learning_rate, schedule.total_steps),
                         (LORA_LEARNING_RATE, 1))
        self.assertNotEqual(LORA_LEARNING_RATE, 5e-5)
        model.compile(learning_rate=2e-4)
        self.assertEqual(model.optimizer._learning_rate.peak_learning_rate,
                         2e-4)

    def test_bad_arguments_are_refused_by_name(self):
        model = BertBackbone(**TINY)
        trainable = _weight_names(model.trainable_weights)
        with self.assertRaisesRegex(ValueError, "'value'.*intermediate"):
            model.enable_lora(4, target_names=("query_key_value", "value"))
        for rank in (0, 2.5, True):
            with self.assertRaisesRegex(ValueError, "rank must be"):
                model.enable_lora(rank)
        # A refused call changes nothing.
        self.assertEqual(_weight_names(model.trainable_weights), trainable)
        self.assertFalse(any("lora" in w.path for w in model.weights))
        model.enable_lora(4)
        with self.assertRaisesRegex(ValueError, "already enabled.*rank 4"):
            model.enable_lora(8)

    def test_quantized_models_are_refused_both_ways(self):
        quantized = BertBackbone(**TINY)
        quantized.quantize("int8")
        with self.assertRaisesRegex(ValueError, "quantized"):
            quantized.enable_lora(4)
        adapted = BertClassifier(BertBackbone(**TINY), num_classes=2)
        adapted.backbone.enable_lora(4)
        with self.assertRaisesRegex(ValueError, "LoRA adapters"):
            adapted.quantize("int8")

    def test_saving_writes_the_merged_model(self):
        keras.utils.set_random_seed(5)
        model = BertBackbone(**TINY)
        model.enable_lora(4, target_names=("query_key_value", "output"))
        move_lora_adapters(model)
        inputs = packed_inputs(batch=8)
        expected = _sequence(model, inputs)
        directory = self.get_temp_dir()
        path = os.path.join(directory, "lora.keras")
        model.save(path)
        reloaded = keras.saving.load_model(path)
        self.assertFalse(any("lora" in w.path for w in reloaded.weights))
        self.assertAllClose(_sequence(reloaded, inputs), expected, atol=1e-5)
        model.save_to_preset(os.path.join(directory, "preset"))
        preset = BertBackbone.from_preset(os.path.join(directory, "preset"))
        self.assertAllClose(_sequence(preset, inputs), expected, atol=1e-5)

    def test_huggingface_export_holds_the_merged_kernels(self):
        import transformers

        from keras_bert import export_to_huggingface

        keras.utils.set_random_seed(7)
        model = BertBackbone(**TINY)
        model.enable_lora(4, target_names=("query_key_value",
                                           "intermediate"))
        move_lora_adapters(model)
        inputs = packed_inputs(batch=8)
        hf_dir = os.path.join(self.get_temp_dir(), "hf")
        export_to_huggingface(model, hf_dir)
        expected = ref.huggingface_outputs(
            transformers.BertModel.from_pretrained(hf_dir).eval(), inputs)
        mask = inputs["padding_mask"].astype(bool)
        self.assertAllClose(_sequence(model, inputs)[mask],
                            expected["last_hidden_state"][mask], atol=1e-5)

    @skip_unless_backend("tensorflow")
    def test_saved_model_serves_the_adapted_logits(self):
        # On TensorFlow the export traces the live model, adapters and all;
        # elsewhere it rebuilds from the saved (merged) weights, which
        # test_saving_writes_the_merged_model covers.
        import tensorflow as tf

        from keras_bert import export_saved_model

        keras.utils.set_random_seed(9)
        model = BertClassifier(BertBackbone(**TINY), num_classes=2,
                               preprocessor=None)
        model.backbone.enable_lora(4)
        move_lora_adapters(model)
        inputs = packed_inputs(batch=4)
        expected = to_numpy(model.predict(inputs, verbose=0))
        path = os.path.join(self.get_temp_dir(), "served")
        export_saved_model(model, path, include_preprocessing=False,
                           verbose=False)
        serve = tf.saved_model.load(path).signatures["serving_packed"]
        served = serve(**{k: tf.constant(v) for k, v in inputs.items()})
        self.assertAllClose(served["logits"].numpy(), expected, atol=1e-5)

