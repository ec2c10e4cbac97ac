"""`predict_batch`: on TensorFlow a short job on a fresh model runs eagerly
(no XLA compilation for one line), a longer job or a model past its first
calls runs compiled; the outputs are the same either way.
`predict_bucketed` pads a batch to a bucket where shapes compile, and to
its longest row on eager PyTorch."""

from unittest import mock

import keras

from keras_bert import BertBackbone
from keras_bert.models import bucketed_inference
from keras_bert.models.bucketed_inference import EAGER_CALLS
from keras_bert.models.bucketed_inference import predict_batch
from tests.models.tiny_models import TINY
from tests.models.tiny_models import packed_inputs
from tests.test_case import TestCase


class PredictBatchTest(TestCase):
    def test_a_short_job_on_a_fresh_model_compiles_nothing_on_tensorflow(self):
        model = BertBackbone(**TINY)
        x = packed_inputs()
        first = predict_batch(model, x, calls=1)
        eager = keras.config.backend() == "tensorflow"
        self.assertEqual(model.predict_function is None, eager)
        for _ in range(EAGER_CALLS):
            again = predict_batch(model, x, calls=1)
        # Past its first calls the model runs compiled on every backend.
        self.assertIsNotNone(model.predict_function)
        compiled = model.predict_on_batch(x)
        for key in ("sequence_output", "pooled_output"):
            self.assertAllClose(first[key], compiled[key], atol=1e-5)
            self.assertAllClose(again[key], compiled[key], atol=1e-5)

    def test_a_long_job_compiles_at_once(self):
        model = BertBackbone(**TINY)
        predict_batch(model, packed_inputs(), calls=EAGER_CALLS + 1)
        self.assertIsNotNone(model.predict_function)

    def test_predict_bucketed_counts_its_calls(self):
        model = BertBackbone(**TINY)
        x = packed_inputs(batch=6)
        bucketed_inference.predict_bucketed(model, x, batch_size=1)
        # Six calls: more than a short job, so compiled from the first.
        self.assertIsNotNone(model.predict_function)


class BucketWidthTest(TestCase):
    def _widths(self, model, x, **kwargs):
        widths = []
        original = bucketed_inference.predict_batch

        def spy(model, batch, calls):
            widths.append(batch["token_ids"].shape[1])
            return original(model, batch, calls)

        with mock.patch.object(bucketed_inference, "predict_batch", spy):
            out = bucketed_inference.predict_bucketed(model, x, **kwargs)
        return widths, out

    def test_eager_pytorch_pads_a_batch_to_its_longest_row_only(self):
        model = BertBackbone(**TINY)
        x = packed_inputs(batch=2, length=14)
        x["padding_mask"][0, 11:] = 0  # rows of 11 and 6 real tokens
        widths, out = self._widths(model, x, batch_size=1)
        full = model.predict_on_batch(x)["sequence_output"]
        eager_torch = keras.config.backend() == "torch"
        # Elsewhere each row is padded to a compiled bucket: 8, then 14
        # (the packed length, the first bucket past 11 being 16).
        self.assertEqual(widths, [6, 11] if eager_torch else [8, 14])
        mask = x["padding_mask"].astype(bool)
        self.assertAllClose(out["sequence_output"][mask], full[mask],
                            atol=1e-5)
        if eager_torch:  # compiled PyTorch keeps the buckets
            model.jit_compile = True
            self.assertEqual(self._widths(model, x, batch_size=1)[0],
                             [8, 14])
        # Buckets asked for are kept on every backend.
        self.assertEqual(self._widths(model, x, batch_size=1,
                                      bucket_lengths=[12])[0], [12, 12])
