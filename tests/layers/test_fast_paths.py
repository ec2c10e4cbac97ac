"""The fast paths compute the same thing as the plain ones.

Fused attention (`keras.ops.dot_product_attention`) against the explicit
softmax path and an independent NumPy reference, and
`BertBackbone.predict_bucketed` (sorted rows, cut to bucket lengths)
against one fixed-length call. Speed is measured in `bench/`, never here.
"""

import contextlib
import math
from unittest import mock

import numpy as np

from keras_bert import BertBackbone
from keras_bert.models import bucketed_inference
from keras_bert.layers import MultiHeadSelfAttention
from tests import numpy_bert
from tests.test_case import TestCase
from tests.test_case import to_numpy

TINY = dict(vocabulary_size=60, num_layers=2, num_heads=2, hidden_dim=16,
            intermediate_dim=32, max_sequence_length=32, dropout=0.0)


def _attention_inputs(batch=3, length=9, hidden=16, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(batch, length, hidden)).astype("float32")
    mask = np.ones((batch, length), "int32")
    mask[1, 4:] = 0
    mask[2, 1:] = 0  # only [CLS] is real
    return x, mask


def _numpy_attention(layer, x, mask):
    w = numpy_bert.weights_of(layer)
    batch, length, hidden = x.shape
    heads, head_dim = layer.num_heads, hidden // layer.num_heads
    qkv = np.einsum("btd,dkh->btkh", x.astype("float64"),
                    w["query_key_value/kernel"]) + w["query_key_value/bias"]
    q, k, v = (qkv[:, :, i].reshape(batch, length, heads, head_dim)
               for i in range(3))
    logits = np.einsum("btnh,bsnh->bnts", q, k) / math.sqrt(head_dim)
    logits = np.where(mask.astype(bool)[:, None, None, :], logits, -np.inf)
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    out = np.einsum("bnts,bsnh->btnh", probs, v).reshape(batch, length, hidden)
    return out @ w["output_dense/kernel"] + w["output_dense/bias"]


def _ragged_inputs(lengths, length, seed=0):
    """Right-padded rows of the given real lengths, [CLS] ... [SEP]."""
    rng = np.random.default_rng(seed)
    mask = (np.arange(length)[None] < np.asarray(lengths)[:, None])
    ids = rng.integers(5, TINY["vocabulary_size"], (len(lengths), length))
    segments = (np.arange(length)[None] >= np.asarray(lengths)[:, None] // 2)
    return {"token_ids": (ids * mask).astype("int32"),
            "segment_ids": (segments * mask).astype("int32"),
            "padding_mask": mask.astype("int32")}


class AttentionFastPathTest(TestCase):
    def test_fused_equals_explicit_and_numpy_in_float32(self):
        layer = MultiHeadSelfAttention(num_heads=4, hidden_dim=16, dropout=0.0)
        x, mask = _attention_inputs()
        fused = to_numpy(layer(x, padding_mask=mask))
        explicit, _ = layer(x, padding_mask=mask, return_attention_scores=True)
        self.assertAllClose(fused, explicit, atol=1e-5, rtol=0)
        self.assertAllClose(fused, _numpy_attention(layer, x, mask),
                            atol=1e-5, rtol=0)

    def test_both_inference_paths_equal_numpy_in_float32(self):
        # The layer picks ops.dot_product_attention or the explicit
        # head-major form (deferred normalization) per backend; both must
        # give the same result on every backend, padded or not.
        x, mask = _attention_inputs()
        for explicit in (False, True):
            layer = MultiHeadSelfAttention(num_heads=4, hidden_dim=16,
                                           dropout=0.0)
            layer._explicit_is_faster = lambda explicit=explicit: explicit
            padded, unpadded = layer(x, padding_mask=mask), layer(x)
            ones = np.ones(x.shape[:2], "int32")
            self.assertAllClose(padded, _numpy_attention(layer, x, mask),
                                atol=1e-5, rtol=0, msg=f"explicit={explicit}")
            self.assertAllClose(unpadded, _numpy_attention(layer, x, ones),
                                atol=1e-5, rtol=0, msg=f"explicit={explicit}")

    def test_fused_without_padding_mask_attends_everywhere(self):
        layer = MultiHeadSelfAttention(num_heads=2, hidden_dim=16, dropout=0.0)
        x, _ = _attention_inputs()
        ones = np.ones(x.shape[:2], "int32")
        self.assertAllClose(layer(x), _numpy_attention(layer, x, ones),
                            atol=1e-5, rtol=0)

    def test_bfloat16_stays_within_bfloat16_tolerance(self):
        x, mask = _attention_inputs()
        reference = MultiHeadSelfAttention(num_heads=4, hidden_dim=16)
        expected = to_numpy(reference(x, padding_mask=mask))
        layer = MultiHeadSelfAttention(num_heads=4, hidden_dim=16,
                                       dtype="bfloat16")
        layer.build(x.shape)
        layer.set_weights(reference.get_weights())
        out = to_numpy(layer(x, padding_mask=mask)).astype("float32")
        # bfloat16 keeps 8 mantissa bits: ~0.4% per rounding, a few roundings.
        scale = np.abs(expected).max()
        self.assertLess(np.abs(out - expected).max() / scale, 3e-2)


@contextlib.contextmanager
def spying_on_batches():
    """The batches `predict_bucketed` runs, in order (eager or compiled:
    `predict_batch` is where each goes)."""
    batches = []
    run = bucketed_inference.predict_batch

    def spy(model, batch, calls):
        batches.append(batch)
        return run(model, batch, calls)

    with mock.patch.object(bucketed_inference, "predict_batch", spy):
        yield batches


class PredictBucketedTest(TestCase):
    def test_same_per_sentence_outputs_as_fixed_padding(self):
        model = BertBackbone(**TINY)
        lengths = [3, 17, 5, 32, 2, 9, 16, 4, 11]
        x = _ragged_inputs(lengths, 32)
        fixed = to_numpy(model(x))
        bucketed = model.predict_bucketed(x, batch_size=4,
                                          bucket_lengths=[4, 8, 16])
        real = x["padding_mask"].astype(bool)
        self.assertAllClose(bucketed["pooled_output"], fixed["pooled_output"],
                            atol=1e-5, rtol=0)
        self.assertAllClose(bucketed["sequence_output"][real],
                            fixed["sequence_output"][real], atol=1e-5, rtol=0)
        self.assertEqual(np.abs(bucketed["sequence_output"][~real]).max(), 0)

    def test_batches_are_cut_to_buckets_with_one_batch_size(self):
        model = BertBackbone(**TINY)
        x = _ragged_inputs([3, 17, 5, 30, 2, 9, 16, 4, 11], 32)
        with spying_on_batches() as batches:
            model.predict_bucketed(x, batch_size=4,
                                   bucket_lengths=[4, 8, 16, 24])
        shapes = [batch["token_ids"].shape for batch in batches]
        # Sorted lengths 2 3 4 5 | 9 11 16 17 | 30 (+3 repeated rows): each
        # batch gets the smallest bucket that holds it, the input length 32
        # being the last one.
        self.assertEqual(shapes, [(4, 8), (4, 24), (4, 32)])

    def test_default_buckets_grow_with_the_length(self):
        model = BertBackbone(**{**TINY, "max_sequence_length": 256})
        x = _ragged_inputs([5, 9, 20, 60, 70, 100, 130, 200], 256)
        # The buckets of every backend that compiles shapes (eager PyTorch
        # pads to each batch's longest row: test_bucketed_inference.py).
        with spying_on_batches() as batches, mock.patch.object(
                bucketed_inference, "compiles_no_shapes", return_value=False):
            model.predict_bucketed(x, batch_size=2)
        shapes = [batch["token_ids"].shape[1] for batch in batches]
        # Steps of 8 to 64, of 16 to 128, then of 32: the longest row of
        # each pair (9, 60, 100, 200) padded by at most a step.
        self.assertEqual(shapes, [16, 64, 112, 224])

    def test_hidden_states_are_unbucketed_too(self):
        model = BertBackbone(**TINY, output_hidden_states=True)
        x = _ragged_inputs([4, 12, 7], 16)
        fixed = to_numpy(model(x))
        bucketed = model.predict_bucketed(x, batch_size=2,
                                          bucket_lengths=[8])
        real = x["padding_mask"].astype(bool)
        self.assertEqual(len(bucketed["hidden_states"]), TINY["num_layers"] + 1)
        for got, want in zip(bucketed["hidden_states"],
                             fixed["hidden_states"]):
            self.assertEqual(got.shape, want.shape)
            self.assertAllClose(got[real], want[real], atol=1e-5, rtol=0)

    def test_single_short_batch_keeps_its_size(self):
        model = BertBackbone(**TINY)
        x = _ragged_inputs([3, 6], 32)
        out = model.predict_bucketed(x, batch_size=8, bucket_lengths=[8])
        fixed = to_numpy(model(x))
        self.assertEqual(out["sequence_output"].shape, (2, 32, 16))
        self.assertAllClose(out["pooled_output"], fixed["pooled_output"],
                            atol=1e-5, rtol=0)

