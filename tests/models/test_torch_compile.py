"""`jit_compile=True` on the torch backend: one torch.compile graph.

Keras compiles a torch model's steps with `torch.compile`. A graph break
inside the encoder splits it into a graph per layer with Python between
them, which took away most of what compiling gains (docs/performance.md,
"torch.compile"). Speed is measured in `bench/`, never here.
"""

import numpy as np

from keras_bert import BertBackbone
from tests.test_case import TestCase
from tests.test_case import skip_unless_backend
from tests.test_case import to_numpy

TINY = dict(vocabulary_size=50, num_layers=2, num_heads=2, hidden_dim=16,
            intermediate_dim=32, max_sequence_length=16)


def _inputs(batch=2, length=8):
    mask = np.ones((batch, length), "int32")
    mask[1, 5:] = 0
    ids = np.arange(batch * length).reshape(batch, length) % 50
    return {"token_ids": (ids * mask).astype("int32"),
            "segment_ids": np.zeros((batch, length), "int32"),
            "padding_mask": mask}


@skip_unless_backend("torch")
class TorchCompileTest(TestCase):
    def test_encoder_traces_as_one_graph(self):
        import torch

        backbone = BertBackbone(**TINY)
        inputs = {k: torch.as_tensor(v) for k, v in _inputs().items()}
        torch._dynamo.reset()
        explained = torch._dynamo.explain(
            lambda x: backbone(x, training=False))(inputs)
        reasons = [b.reason.splitlines()[0] for b in explained.break_reasons]
        self.assertEqual(explained.graph_break_count, 0, reasons)
        self.assertEqual(explained.graph_count, 1)

    def test_compiled_predict_matches_eager(self):
        backbone = BertBackbone(**TINY)
        twin = BertBackbone.from_config(backbone.get_config())
        twin.set_weights(backbone.get_weights())
        twin.jit_compile = True
        inputs = _inputs()
        eager = backbone.predict_on_batch(inputs)
        compiled = twin.predict_on_batch(inputs)
        # Keras wrapped the step in torch.compile, so this compared graphs.
        self.assertTrue(hasattr(twin.predict_function,
                                "_torchdynamo_orig_callable"))
        self.assertFalse(hasattr(backbone.predict_function,
                                 "_torchdynamo_orig_callable"))
        for key in ("sequence_output", "pooled_output"):
            self.assertAllClose(to_numpy(compiled[key]), to_numpy(eager[key]),
                                atol=1e-5, rtol=1e-5)
