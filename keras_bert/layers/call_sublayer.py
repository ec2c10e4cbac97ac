"""`call_sublayer`, for layers written against keras_bert 0.1.

keras_bert's layers now call their sub-layers as Keras code does
(`self.output_dense(x)`): `FusedDense`, `FusedQueryKeyValue`,
`FusedLayerNormalization` and `MultiHeadSelfAttention` skip Keras'
per-call work on PyTorch themselves (`keras_bert._compat.sublayer_call`).
"""

from keras_bert._compat.sublayer_call import call_sublayer

__all__ = ["call_sublayer"]
