import keras

from keras_bert import fused_ops
from keras_bert.layers.activations import get_activation
from keras_bert.layers.bert_initializer import BertInitializer
from keras_bert.layers.dropout import dropout
from keras_bert.layers.fused_dense import FusedDense
from keras_bert.layers.fused_layer_normalization import FusedLayerNormalization
from keras_bert.layers.multi_head_self_attention import MultiHeadSelfAttention


@keras.saving.register_keras_serializable(package="keras_bert")
class TransformerEncoderBlock(keras.layers.Layer):
    """One BERT encoder layer: self-attention and feed-forward, post-norm.

    Post-norm (the original BERT and every released checkpoint):
        h = LayerNorm(x + Dropout(Attention(x)))
        y = LayerNorm(h + Dropout(W2 act(W1 h + b1) + b2))
    With `normalize_first=True` the LayerNorms move before each sub-layer
    (pre-norm), which trains more stably for deep models without warmup.

    Args:
        num_heads: int. Attention heads.
        hidden_dim: int. Model width.
        intermediate_dim: int. Feed-forward inner width (4 x hidden in BERT).
        dropout: float. Dropout on the residual branches and attention probs.
        attention_dropout: float or None. Attention-probability dropout; the
            same as `dropout` when None.
        activation: str. Feed-forward activation: "gelu" (exact erf, the
            default and what checkpoints use), "gelu_approximate" (tanh),
            "relu", "silu", "tanh".
        layer_norm_epsilon: float. LayerNorm epsilon.
        normalize_first: bool. Pre-norm instead of post-norm.
        initializer_range: float. Stddev of the truncated-normal initializer.

    Example:
    >>> import numpy as np
    >>> block = TransformerEncoderBlock(num_heads=2, hidden_dim=8,
    ...                                 intermediate_dim=32)
    >>> x = np.random.rand(2, 5, 8).astype("float32")
    >>> tuple(block(x, padding_mask=np.ones((2, 5), "int32")).shape)
    (2, 5, 8)
    """

    def __init__(
        self,
        num_heads,
        hidden_dim,
        intermediate_dim,
        dropout=0.1,
        attention_dropout=None,
        activation="gelu",
        layer_norm_epsilon=1e-12,
        normalize_first=False,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.hidden_dim = hidden_dim
        self.intermediate_dim = intermediate_dim
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.activation = activation
        self.layer_norm_epsilon = layer_norm_epsilon
        self.normalize_first = normalize_first
        self.initializer_range = initializer_range

        initializer = BertInitializer(initializer_range)
        policy = self.dtype_policy
        self.attention = MultiHeadSelfAttention(
            num_heads=num_heads,
            hidden_dim=hidden_dim,
            dropout=dropout if attention_dropout is None else attention_dropout,
            initializer_range=initializer_range,
            dtype=policy,
            name="attention",
        )
        self.attention_layer_norm = FusedLayerNormalization(
            epsilon=layer_norm_epsilon, dtype=policy,
            name="attention_layer_norm",
        )
        self.intermediate_dense = FusedDense(
            intermediate_dim,
            activation=get_activation(activation),
            kernel_initializer=initializer,
            dtype=policy,
            name="intermediate_dense",
        )
        self.output_dense = FusedDense(
            hidden_dim,
            kernel_initializer=initializer,
            dtype=policy,
            name="output_dense",
        )
        self.output_layer_norm = FusedLayerNormalization(
            epsilon=layer_norm_epsilon, dtype=policy, name="output_layer_norm",
        )
        self.dropout_layer = keras.layers.Dropout(
            dropout, dtype=policy, name="dropout"
        )

    def build(self, inputs_shape, padding_mask_shape=None,
              attention_mask_shape=None):
        inputs_shape = tuple(inputs_shape)
        self.attention.build(inputs_shape)
        self.attention_layer_norm.build(inputs_shape)
        self.intermediate_dense.build(inputs_shape)
        self.output_dense.build(inputs_shape[:-1] + (self.intermediate_dim,))
        self.output_layer_norm.build(inputs_shape)
        self.built = True

    def call(
        self,
        inputs,
        padding_mask=None,
        attention_mask=None,
        training=None,
        return_attention_scores=False,
    ):
        if not (training or return_attention_scores
                or attention_mask is not None):
            fused = self._fused_inference(inputs, padding_mask)
            if fused is not None:
                return fused
        x = inputs
        if self.normalize_first:
            x = self.attention_layer_norm(x)
        attended = self.attention(
            x,
            padding_mask=padding_mask,
            attention_mask=attention_mask,
            training=training,
            return_attention_scores=return_attention_scores,
        )
        if return_attention_scores:
            attended, scores = attended
        x = inputs + dropout(self.dropout_layer, attended, training)
        if not self.normalize_first:
            x = self.attention_layer_norm(x)

        residual = x
        if self.normalize_first:
            x = self.output_layer_norm(x)
        x = self.output_dense(self.intermediate_dense(x))
        x = residual + dropout(self.dropout_layer, x, training)
        if not self.normalize_first:
            x = self.output_layer_norm(x)
        if return_attention_scores:
            return x, scores
        return x

    def _fused_inference(self, inputs, padding_mask):
        # The block in PyTorch's fused inference kernel where that applies
        # (`fused_ops.encoder_block`: PyTorch, no gradients, CPU, float32,
        # no padding), else None. Quantized and LoRA projections, and
        # LayerNorms without both scale and offset, keep their own calls.
        dense = (self.attention.query_key_value, self.attention.output_dense,
                 self.intermediate_dense, self.output_dense)
        norms = (self.attention_layer_norm, self.output_layer_norm)
        if (any(layer.quantization_mode is not None or layer.lora_enabled
                for layer in dense)
                or any(norm.gamma is None or norm.beta is None
                       or norm.rms_scaling for norm in norms)):
            return None
        weights = (dense[0].kernel, dense[0].bias, dense[1].kernel,
                   dense[1].bias, norms[0].gamma, norms[0].beta,
                   dense[2].kernel, dense[2].bias, dense[3].kernel,
                   dense[3].bias, norms[1].gamma, norms[1].beta)
        return fused_ops.encoder_block(
            inputs, padding_mask, weights, self.num_heads, self.activation,
            self.normalize_first, self.layer_norm_epsilon)

    def compute_output_spec(self, inputs, padding_mask=None,
                            attention_mask=None, training=None,
                            return_attention_scores=False):
        # Known without running `call`: Keras would otherwise trace the
        # whole block on every backend (on TensorFlow, in a scratch graph)
        # to learn the shape of each block of a model being built.
        output = keras.KerasTensor(inputs.shape, dtype=self.compute_dtype)
        if not return_attention_scores:
            return output
        # The attention's softmax runs in float32 under every policy.
        batch, length = inputs.shape[0], inputs.shape[1]
        return output, keras.KerasTensor(
            (batch, self.num_heads, length, length), dtype="float32")

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "hidden_dim": self.hidden_dim,
                "intermediate_dim": self.intermediate_dim,
                "dropout": self.dropout,
                "attention_dropout": self.attention_dropout,
                "activation": self.activation,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "normalize_first": self.normalize_first,
                "initializer_range": self.initializer_range,
            }
        )
        return config
