import numpy as np
import pytest

from keras_bert.layers import BertEmbeddings
from tests import numpy_bert
from tests.test_case import TestCase
from tests.test_case import to_numpy

KWARGS = dict(vocabulary_size=40, hidden_dim=8, max_sequence_length=12,
              num_segments=2, dropout=0.0)


def _ids(batch=2, length=6, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 40, (batch, length)).astype("int32"),
            rng.integers(0, 2, (batch, length)).astype("int32"))


class BertEmbeddingsTest(TestCase):
    def test_layer_basics(self):
        tokens, segments = _ids()
        self.run_layer_test(
            BertEmbeddings, KWARGS, tokens,
            call_kwargs={"segment_ids": segments},
            expected_output_shape=(2, 6, 8),
            expected_num_trainable_weights=5,
        )

    def test_embeddings_are_summed_then_normalized(self):
        layer = BertEmbeddings(**KWARGS)
        tokens, segments = _ids(length=7)
        actual = to_numpy(layer(tokens, segments))
        expected = numpy_bert.embeddings(layer, tokens, segments)
        self.assertAllClose(actual, expected, atol=1e-5)
        # A concatenation would change the width; a sum keeps hidden_dim.
        self.assertEqual(actual.shape[-1], KWARGS["hidden_dim"])

    def test_segment_ids_change_the_output(self):
        layer = BertEmbeddings(**KWARGS)
        tokens, _ = _ids()
        zeros = to_numpy(layer(tokens, np.zeros_like(tokens)))
        ones = to_numpy(layer(tokens, np.ones_like(tokens)))
        self.assertGreater(np.abs(zeros - ones).max(), 1e-3)

    def test_positions_restart_at_zero_for_every_sequence(self):
        layer = BertEmbeddings(**KWARGS)
        tokens, segments = _ids(batch=1, length=5)
        batch = np.concatenate([tokens, tokens])
        out = to_numpy(layer(batch, np.concatenate([segments, segments])))
        self.assertAllClose(out[0], out[1])

    def test_position_ids_pick_the_rows_of_the_position_table(self):
        layer = BertEmbeddings(**KWARGS)
        tokens, segments = _ids(batch=1, length=6)
        default = to_numpy(layer(tokens, segments))
        # Two texts of 3 tokens in one row, each from position 0.
        restarted = to_numpy(layer(tokens, segments, position_ids=np.array(
            [[0, 1, 2, 0, 1, 2]])))
        self.assertAllClose(restarted[:, :3], default[:, :3], atol=1e-6)
        self.assertAllClose(
            restarted[:, 3:],
            to_numpy(layer(tokens[:, 3:], segments[:, 3:])), atol=1e-6)
        self.assertGreater(np.abs(restarted[:, 3:] - default[:, 3:]).max(),
                           1e-3)

    def test_too_long_input_names_both_lengths(self):
        layer = BertEmbeddings(**KWARGS)
        tokens = np.zeros((1, 13), "int32")
        with pytest.raises(ValueError, match=r"13.*max_sequence_length=12"):
            layer(tokens, tokens)
