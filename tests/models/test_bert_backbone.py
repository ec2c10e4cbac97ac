import keras
import numpy as np
import pytest

from keras_bert import BertBackbone
from tests import numpy_bert
from tests.test_case import TestCase
from tests.test_case import to_numpy

TINY = dict(vocabulary_size=50, num_layers=2, num_heads=2, hidden_dim=16,
            intermediate_dim=32, max_sequence_length=16, dropout=0.0)


def _inputs(batch=2, length=7, seed=0, pad_from=5):
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, length), "int32")
    mask[-1, pad_from:] = 0
    return {
        "token_ids": rng.integers(5, 50, (batch, length)).astype("int32")
        * mask,
        "segment_ids": (np.arange(length) >= length // 2).astype("int32")[None]
        .repeat(batch, 0) * mask,
        "padding_mask": mask,
    }


class BertBackboneTest(TestCase):
    def test_backbone_basics(self):
        self.run_backbone_test(
            BertBackbone, TINY, _inputs(),
            expected_output_shape={"sequence_output": (2, 7, 16),
                                   "pooled_output": (2, 16)},
        )

    def test_matches_numpy_reference(self):
        model = BertBackbone(**TINY)
        inputs = _inputs()
        outputs = model(inputs)
        sequence, pooled = numpy_bert.backbone(model, inputs)
        self.assertAllClose(outputs["sequence_output"], sequence, atol=1e-5)
        self.assertAllClose(outputs["pooled_output"], pooled, atol=1e-5)

    def test_bidirectional_unlike_a_causal_mask(self):
        model = BertBackbone(**TINY)
        inputs = _inputs(batch=1, pad_from=7)
        changed = {k: v.copy() for k, v in inputs.items()}
        changed["token_ids"][0, 5] = (changed["token_ids"][0, 5] + 1) % 50
        left = slice(0, 5)

        before = to_numpy(model(inputs)["sequence_output"])[0, left]
        after = to_numpy(model(changed)["sequence_output"])[0, left]
        # BERT: a token on the left sees a change on its right.
        self.assertGreater(np.abs(before - after).max(), 1e-4)

        causal_before = numpy_bert.backbone(model, inputs, causal=True)[0]
        causal_after = numpy_bert.backbone(model, changed, causal=True)[0]
        # The same weights under a causal mask: the left is untouched.
        self.assertAllClose(causal_before[0, left], causal_after[0, left],
                            atol=1e-9)

    def test_segment_embedding_changes_outputs(self):
        model = BertBackbone(**TINY)
        inputs = _inputs()
        flipped = dict(inputs, segment_ids=1 - inputs["segment_ids"])
        diff = np.abs(to_numpy(model(inputs)["sequence_output"])
                      - to_numpy(model(flipped)["sequence_output"])).max()
        self.assertGreater(diff, 1e-3)

    def test_padding_invariance(self):
        model = BertBackbone(**TINY)
        inputs = _inputs(batch=1, length=6, pad_from=6)
        padded = {k: np.pad(v, ((0, 0), (0, 5))) for k, v in inputs.items()}
        short = to_numpy(model(inputs))
        long = to_numpy(model(padded))
        self.assertAllClose(long["sequence_output"][:, :6],
                            short["sequence_output"], atol=1e-5)
        self.assertAllClose(long["pooled_output"], short["pooled_output"],
                            atol=1e-5)

    def test_too_long_input_is_a_value_error(self):
        model = BertBackbone(**TINY)
        inputs = _inputs(length=17, pad_from=17)
        with pytest.raises(ValueError, match="17.*max_sequence_length=16"):
            model(inputs)
        with pytest.raises(ValueError, match="17.*max_sequence_length=16"):
            model.predict(inputs, verbose=0)

    def test_hidden_states_and_attentions_on_request(self):
        model = BertBackbone(**TINY, output_hidden_states=True,
                             output_attentions=True)
        inputs = _inputs()
        outputs = model(inputs)
        self.assertEqual(len(outputs["hidden_states"]), 3)
        self.assertAllClose(outputs["hidden_states"][-1],
                            outputs["sequence_output"])
        probs = to_numpy(outputs["attentions"][0])
        self.assertEqual(probs.shape, (2, 2, 7, 7))
        self.assertEqual(probs[-1, :, :, 5:].max(), 0.0)
        plain = BertBackbone(**TINY)
        plain.set_weights(model.get_weights())
        self.assertAllClose(plain(inputs)["sequence_output"],
                            outputs["sequence_output"], atol=1e-5)

    def test_mixed_precision_is_close_to_float32(self):
        model = BertBackbone(**TINY)
        inputs = _inputs()
        reference = to_numpy(model(inputs)["sequence_output"])
        for policy, atol in (("mixed_float16", 2e-2), ("mixed_bfloat16", 1e-1)):
            mixed = BertBackbone(**TINY, dtype=policy)
            mixed.set_weights(model.get_weights())
            out = mixed(inputs)["sequence_output"]
            self.assertEqual(keras.backend.standardize_dtype(out.dtype),
                             policy.split("_")[1])
            self.assertAllClose(to_numpy(out).astype("float32"), reference,
                                atol=atol, rtol=0)

    def test_named_presets(self):
        model = BertBackbone.from_preset("bert_tiny_uncased_config")
        self.assertEqual((model.num_layers, model.hidden_dim, model.num_heads,
                          model.intermediate_dim, model.vocabulary_size),
                         (2, 128, 2, 512, 30522))
        self.assertIn("bert_large_cased_config", BertBackbone.presets())
        with pytest.raises(ValueError,
                           match="'bert_huge': no such directory.*size name"):
            BertBackbone.from_preset("bert_huge")

    def test_fit_on_tf_data(self):
        import tensorflow as tf

        backbone = BertBackbone(**TINY)
        pooled = backbone(backbone.input)["pooled_output"]
        model = keras.Model(backbone.input, keras.layers.Dense(1)(pooled))
        inputs = _inputs(batch=16, pad_from=4)
        # A learnable target: whether the first real token is even.
        target = (inputs["token_ids"][:, 0] % 2).astype("float32")[:, None]
        ds = tf.data.Dataset.from_tensor_slices((inputs, target)).batch(8)
        model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="mse")
        history = model.fit(ds.repeat(), epochs=3, steps_per_epoch=10,
                            verbose=0)
        losses = history.history["loss"]
        self.assertLess(losses[-1], losses[0])


class BertBackbonePrecisionTest(TestCase):
    def test_bfloat16_survives_save_and_load(self):
        model = BertBackbone(**TINY, dtype="bfloat16")
        self.assertEqual(model.compute_dtype, "bfloat16")
        restored = self.run_model_saving_test(model, _inputs(), atol=0)
        self.assertEqual(restored.get_config()["dtype"]["config"]["name"],
                         "bfloat16")
        self.assertEqual(restored.pooler.compute_dtype, "bfloat16")
        self.assertEqual(
            keras.backend.standardize_dtype(
                restored(_inputs())["sequence_output"].dtype), "bfloat16")
