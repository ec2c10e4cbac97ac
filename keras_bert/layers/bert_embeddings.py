import keras
from keras import ops

from keras_bert._compat.sublayer_call import call_sublayer
from keras_bert.layers.bert_initializer import BertInitializer
from keras_bert.layers.dropout import dropout
from keras_bert.layers.fused_layer_normalization import FusedLayerNormalization


@keras.saving.register_keras_serializable(package="keras_bert")
class BertEmbeddings(keras.layers.Layer):
    """BERT's input embeddings: token + segment + position, summed, normalized.

    `e_i = LayerNorm(E_token[x_i] + E_segment[s_i] + E_position[i])`, then
    dropout. Position ids run from 0 for every sequence (no offsets for
    padding), as in the original BERT, unless `position_ids` are passed:
    several texts sharing one row each start again at 0.

    Args:
        vocabulary_size: int. Number of WordPiece ids.
        hidden_dim: int. Embedding width.
        max_sequence_length: int. Number of learned positions; longer input
            raises a `ValueError`.
        num_segments: int. Number of segment (token type) ids.
        dropout: float. Dropout rate after the LayerNorm.
        layer_norm_epsilon: float. LayerNorm epsilon (1e-12 in BERT).
        initializer_range: float. Stddev of the truncated-normal initializer.

    Example:
    >>> import numpy as np
    >>> layer = BertEmbeddings(vocabulary_size=100, hidden_dim=8,
    ...                        max_sequence_length=16)
    >>> ids = np.array([[2, 7, 3, 0]])
    >>> tuple(layer(ids, ids * 0).shape)
    (1, 4, 8)
    """

    def __init__(
        self,
        vocabulary_size,
        hidden_dim,
        max_sequence_length=512,
        num_segments=2,
        dropout=0.1,
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocabulary_size = vocabulary_size
        self.hidden_dim = hidden_dim
        self.max_sequence_length = max_sequence_length
        self.num_segments = num_segments
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range

        initializer = BertInitializer(initializer_range)
        self.token_embedding = keras.layers.Embedding(
            vocabulary_size,
            hidden_dim,
            embeddings_initializer=initializer,
            dtype=self.dtype_policy,
            name="token_embedding",
        )
        self.segment_embedding = keras.layers.Embedding(
            num_segments,
            hidden_dim,
            embeddings_initializer=initializer,
            dtype=self.dtype_policy,
            name="segment_embedding",
        )
        self.layer_norm = FusedLayerNormalization(
            epsilon=layer_norm_epsilon,
            dtype=self.dtype_policy,
            name="layer_norm",
        )
        self.dropout_layer = keras.layers.Dropout(
            dropout, dtype=self.dtype_policy, name="dropout"
        )

    def build(self, token_ids_shape, segment_ids_shape=None,
              position_ids_shape=None):
        self.token_embedding.build(token_ids_shape)
        self.segment_embedding.build(token_ids_shape)
        self.position_embeddings = self.add_weight(
            name="position_embeddings",
            shape=(self.max_sequence_length, self.hidden_dim),
            initializer=BertInitializer(self.initializer_range),
        )
        self.layer_norm.build(tuple(token_ids_shape) + (self.hidden_dim,))
        self.built = True

    def call(self, token_ids, segment_ids=None, position_ids=None,
             training=None):
        length = token_ids.shape[1]
        # A static check gives a readable error on every backend; without it
        # an over-long input is an opaque gather/index error (or, on some
        # devices, silently clamped positions). With `position_ids` a row
        # may be longer than the positions: its texts each start again.
        if (position_ids is None and length is not None
                and length > self.max_sequence_length):
            raise ValueError(
                f"Input sequence length {length} exceeds "
                f"max_sequence_length={self.max_sequence_length}. Truncate "
                "the input (the preprocessor does) or use a model with more "
                "positions."
            )
        if segment_ids is None:
            segment_ids = ops.zeros_like(token_ids)
        if position_ids is None:
            positions = self.position_embeddings[None, : ops.shape(token_ids)[1]]
        else:
            positions = ops.take(self.position_embeddings, position_ids, axis=0)
        # Keras' own Embedding layers: on PyTorch their `__call__` would
        # take longer than a short row's lookups (`call_sublayer`).
        x = call_sublayer(self.token_embedding, token_ids) + call_sublayer(
            self.segment_embedding, segment_ids)
        x = x + ops.cast(positions, x.dtype)
        x = self.layer_norm(x)
        return dropout(self.dropout_layer, x, training)

    def compute_output_shape(self, token_ids_shape, segment_ids_shape=None,
                             position_ids_shape=None):
        return tuple(token_ids_shape) + (self.hidden_dim,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "hidden_dim": self.hidden_dim,
                "max_sequence_length": self.max_sequence_length,
                "num_segments": self.num_segments,
                "dropout": self.dropout,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "initializer_range": self.initializer_range,
            }
        )
        return config
