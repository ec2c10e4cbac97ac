import keras
from keras import ops

from keras_bert import fused_ops
from keras_bert.layers.activations import get_activation
from keras_bert.layers.bert_initializer import BertInitializer
from keras_bert.layers.fused_dense import FusedDense
from keras_bert.layers.fused_layer_normalization import FusedLayerNormalization


@keras.saving.register_keras_serializable(package="keras_bert")
class MaskedLMHead(keras.layers.Layer):
    """BERT's masked-LM head, evaluated only at the selected positions.

    Gathers the hidden states at `mask_positions` first, so the vocabulary
    projection costs `batch x num_masks x vocab`, not `batch x length x
    vocab`. Then Dense + activation + LayerNorm (the "transform"), and a
    decoder whose matrix is the token embedding matrix (tied), plus its own
    output bias.

    Args:
        vocabulary_size: int. Output classes (the WordPiece vocabulary).
        hidden_dim: int. Width of the transform.
        token_embedding: `keras.layers.Embedding` or None. The embedding
            whose matrix is the decoder (tied weights). When None the head
            owns an untied decoder kernel.
        activation: str. Transform activation ("gelu" in BERT).
        layer_norm_epsilon: float. LayerNorm epsilon.
        initializer_range: float. Stddev of the truncated-normal init.

    Example:
    >>> import numpy as np
    >>> head = MaskedLMHead(vocabulary_size=50, hidden_dim=8)
    >>> hidden = np.random.rand(2, 6, 8).astype("float32")
    >>> tuple(head(hidden, np.array([[1, 2], [3, 0]])).shape)
    (2, 2, 50)
    """

    def __init__(
        self,
        vocabulary_size,
        hidden_dim,
        token_embedding=None,
        activation="gelu",
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocabulary_size = vocabulary_size
        self.hidden_dim = hidden_dim
        self.token_embedding = token_embedding
        self.activation = activation
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range

        self.transform_dense = FusedDense(
            hidden_dim,
            activation=get_activation(activation),
            kernel_initializer=BertInitializer(initializer_range),
            dtype=self.dtype_policy,
            name="transform_dense",
        )
        self.transform_layer_norm = FusedLayerNormalization(
            epsilon=layer_norm_epsilon,
            dtype=self.dtype_policy,
            name="transform_layer_norm",
        )

    def build(self, inputs_shape, mask_positions_shape=None):
        feature_shape = (None, None, self.hidden_dim)
        self.transform_dense.build((None, None, inputs_shape[-1]))
        self.transform_layer_norm.build(feature_shape)
        if self.token_embedding is None:
            self.decoder_kernel = self.add_weight(
                name="decoder_kernel",
                shape=(self.hidden_dim, self.vocabulary_size),
                initializer=BertInitializer(self.initializer_range),
            )
        self.output_bias = self.add_weight(
            name="output_bias",
            shape=(self.vocabulary_size,),
            initializer="zeros",
        )
        self.built = True

    def call(self, inputs, mask_positions):
        # (batch, num_masks, hidden): only the selected positions.
        x = ops.take_along_axis(
            inputs, ops.cast(mask_positions, "int32")[:, :, None], axis=1
        )
        x = self.transform_layer_norm(self.transform_dense(x))
        if self.token_embedding is not None:
            kernel = ops.transpose(self.token_embedding.embeddings)
        else:
            kernel = self.decoder_kernel
        return fused_ops.dense(x, ops.cast(kernel, x.dtype),
                               ops.cast(self.output_bias, x.dtype))

    def compute_output_shape(self, inputs_shape, mask_positions_shape):
        return tuple(mask_positions_shape) + (self.vocabulary_size,)

    def get_config(self):
        # The tied embedding is not serialized: the owning task model passes
        # it again when it is rebuilt from its own config.
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "hidden_dim": self.hidden_dim,
                "activation": self.activation,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "initializer_range": self.initializer_range,
            }
        )
        return config
