import os
import warnings

import keras

from keras_bert import torch_int8
from keras_bert._compat.model_compile import AutoJitCompile
from keras_bert.checkpoints.backbone_arguments import check_backbone_arguments
from keras_bert.checkpoints.known_checkpoints import KNOWN_CHECKPOINTS
from keras_bert.checkpoints.known_checkpoints import parameter_count
from keras_bert.checkpoints.loading import load_backbone
from keras_bert.checkpoints.preset_names import resolve_preset
from keras_bert.checkpoints.saving import save_to_preset
from keras_bert.configs import BACKBONE_CONFIGS
from keras_bert.configs import get_backbone_config
from keras_bert.layers.bert_embeddings import BertEmbeddings
from keras_bert.layers.bert_initializer import BertInitializer
from keras_bert.layers.transformer_encoder_block import TransformerEncoderBlock
from keras_bert.models.adapters_mixin import AdaptersMixin
from keras_bert.models.bucketed_inference import predict_bucketed
from keras_bert.models.encoder_stack import backbone_outputs
from keras_bert.models.encoder_stack import direct_forward
from keras_bert.models.encoder_stack import runs_direct_forward
from keras_bert.models.lora import enable_lora
from keras_bert.models.lora import lora_layers
from keras_bert.models.xla_default import xla_by_default
from keras_bert.packed_inputs import PACKED_INPUTS
from keras_bert.quantization import dtype_for_config
from keras_bert.quantization import is_gemm_layer
from keras_bert.quantization import needs_xla
from keras_bert.quantization import one_garbage_collection
from keras_bert.torch_int8 import FastTorchInt8


@keras.saving.register_keras_serializable(package="keras_bert")
class BertBackbone(AdaptersMixin, FastTorchInt8, AutoJitCompile, keras.Model):
    """The BERT encoder as a backend-agnostic Keras Functional model.

    Embeddings (token + segment + position, summed, LayerNorm, dropout), a
    stack of post-norm bidirectional Transformer blocks, and a tanh pooler
    on the first ([CLS]) position.

    Inputs: a dict of int tensors of shape `(batch, length)`, any length up
    to `max_sequence_length`: `token_ids`, `segment_ids` (0 for `[CLS] A
    [SEP]`, 1 for `B [SEP]`) and `padding_mask` (1 real token, 0 padding).

    Outputs: a dict with `sequence_output` `(batch, length, hidden_dim)` and
    `pooled_output` `(batch, hidden_dim)`; with `output_hidden_states`, also
    `hidden_states`, a list of `num_layers + 1` tensors (the embeddings,
    then each block); with `output_attentions`, `attentions`, a list of
    `(batch, num_heads, length, length)` probabilities per block (this uses
    the explicit attention path, so leave it off for speed).

    Args:
        vocabulary_size: int. Number of WordPiece ids.
        num_layers: int. Number of Transformer blocks.
        num_heads: int. Attention heads per block.
        hidden_dim: int. Model width.
        intermediate_dim: int. Feed-forward inner width.
        dropout: float. Dropout rate on embeddings and residual branches.
        max_sequence_length: int. Number of learned positions.
        num_segments: int. Number of segment (token type) ids.
        attention_dropout: float or None. Attention-probability dropout;
            `dropout` when None.
        activation: str. Feed-forward activation ("gelu" is the exact erf
            GELU of the original BERT; "gelu_approximate" the tanh form).
        layer_norm_epsilon: float. LayerNorm epsilon.
        normalize_first: bool. Pre-norm blocks (with a final LayerNorm)
            instead of BERT's post-norm.
        initializer_range: float. Stddev of the truncated-normal init.
        output_hidden_states: bool. Also return every layer's output.
        output_attentions: bool. Also return attention probabilities.
        dtype: str or `keras.DTypePolicy`. E.g. "float32", "mixed_bfloat16".

    Example:
    >>> import numpy as np
    >>> model = BertBackbone(vocabulary_size=100, num_layers=2, num_heads=2,
    ...                      hidden_dim=16, intermediate_dim=32)
    >>> inputs = {"token_ids": np.array([[2, 8, 9, 3, 0]]),
    ...           "segment_ids": np.zeros((1, 5), "int32"),
    ...           "padding_mask": np.array([[1, 1, 1, 1, 0]])}
    >>> outputs = model(inputs)
    >>> tuple(outputs["sequence_output"].shape), tuple(outputs["pooled_output"].shape)
    ((1, 5, 16), (1, 16))
    """

    # jit_compile="auto": XLA on TensorFlow's CPUs as well, also after a
    # reload (keras_bert/models/xla_default.py).
    xla_by_default = staticmethod(xla_by_default)

    def __init__(
        self,
        vocabulary_size,
        num_layers,
        num_heads,
        hidden_dim,
        intermediate_dim,
        dropout=0.1,
        max_sequence_length=512,
        num_segments=2,
        attention_dropout=None,
        activation="gelu",
        layer_norm_epsilon=1e-12,
        normalize_first=False,
        initializer_range=0.02,
        output_hidden_states=False,
        output_attentions=False,
        dtype=None,
        **kwargs,
    ):
        # Layers first, as locals: the torch backend cannot track attributes
        # set before `keras.Model.__init__` runs.
        embeddings = BertEmbeddings(
            vocabulary_size=vocabulary_size,
            hidden_dim=hidden_dim,
            max_sequence_length=max_sequence_length,
            num_segments=num_segments,
            dropout=dropout,
            layer_norm_epsilon=layer_norm_epsilon,
            initializer_range=initializer_range,
            dtype=dtype,
            name="embeddings",
        )
        blocks = [
            TransformerEncoderBlock(
                num_heads=num_heads,
                hidden_dim=hidden_dim,
                intermediate_dim=intermediate_dim,
                dropout=dropout,
                attention_dropout=attention_dropout,
                activation=activation,
                layer_norm_epsilon=layer_norm_epsilon,
                normalize_first=normalize_first,
                initializer_range=initializer_range,
                dtype=dtype,
                name=f"transformer_layer_{i}",
            )
            for i in range(num_layers)
        ]
        final_layer_norm = None
        if normalize_first:
            final_layer_norm = keras.layers.LayerNormalization(
                epsilon=layer_norm_epsilon, dtype=dtype,
                name="final_layer_norm",
            )
        pooler = keras.layers.Dense(
            hidden_dim,
            activation="tanh",
            kernel_initializer=BertInitializer(initializer_range),
            dtype=dtype,
            name="pooler",
        )

        inputs = {
            name: keras.Input(shape=(None,), dtype="int32", name=name)
            for name in PACKED_INPUTS
        }
        outputs = backbone_outputs(
            (embeddings, blocks, final_layer_norm), pooler, inputs,
            output_hidden_states, output_attentions)
        super().__init__(inputs=inputs, outputs=outputs, dtype=dtype, **kwargs)
        if dtype is not None:
            # A Functional model drops `dtype`; its config must keep it, or
            # a bfloat16 model would reload as float32.
            self.dtype_policy = dtype

        self.vocabulary_size = vocabulary_size
        self.num_layers = num_layers
        self.num_heads = num_heads
        self.hidden_dim = hidden_dim
        self.intermediate_dim = intermediate_dim
        self.dropout = dropout
        self.max_sequence_length = max_sequence_length
        self.num_segments = num_segments
        self.attention_dropout = attention_dropout
        self.activation = activation
        self.layer_norm_epsilon = layer_norm_epsilon
        self.normalize_first = normalize_first
        self.initializer_range = initializer_range
        self.output_hidden_states = output_hidden_states
        self.output_attentions = output_attentions
        self.embeddings = embeddings
        self.transformer_layers = blocks
        self.final_layer_norm = final_layer_norm
        self.pooler = pooler

    def call(self, inputs, training=None, mask=None, **kwargs):
        # On PyTorch, the code that built the graph instead of a walk of
        # it (`encoder_stack.runs_direct_forward`), with the int8 kernels
        # `FastTorchInt8.call` gives the walk.
        if not runs_direct_forward(inputs, mask, kwargs):
            return super().call(inputs, training=training, mask=mask,
                                **kwargs)
        with torch_int8.use_fast_torch_int8(self):
            return direct_forward(self, inputs, training=training)

    @property
    def token_embedding(self):
        """The token `Embedding` layer (its matrix is tied to the MLM decoder)."""
        return self.embeddings.token_embedding

    def quantize(self, mode=None, config=None, filters=None, **kwargs):
        """Quantizes the weights of the GEMMs, e.g. `quantize("int8")`.

        Keras' quantization (`keras.Model.quantize`), with one default of
        keras_bert's: without `filters`, only the `Dense` layers and the
        fused query/key/value projection are quantized; the embedding
        tables keep the float dtype (a lookup does no arithmetic). A
        quantized model saves, reloads and exports like any other.

        Args:
            mode: str. "int8" (or another Keras mode: "int4", "float8").
            config: optional `keras.quantizers.QuantizationConfig`.
            filters: optional Keras filters (regex on layer names, list of
                them, or a callable on the layer); replaces the default.

        Example:
        >>> model = BertBackbone.from_preset("bert_tiny_uncased_config")
        >>> model.quantize("int8")
        >>> model.pooler.quantization_mode, model.token_embedding.quantization_mode
        ('int8', None)
        """
        if lora_layers(self):
            raise ValueError(
                "This backbone has LoRA adapters: save and reload it to "
                "merge them into the kernels, then quantize the merged model.")
        with warnings.catch_warnings(), one_garbage_collection():
            # Keras converts each JAX kernel with `np.asarray(copy=False)`,
            # which JAX answers with one warning per layer; nothing is wrong.
            warnings.filterwarnings(
                "ignore", message="__array__ implementation doesn't accept")
            super().quantize(
                mode, config=config,
                filters=is_gemm_layer if filters is None else filters,
                **kwargs)
        if needs_xla(self):
            self.jit_compile = True

    def enable_lora(self, rank, target_names=None, lora_alpha=None):
        """Freezes the backbone and trains low-rank adapters (LoRA) instead.

        In each encoder block the layers named by `target_names` get
        Keras' LoRA (`kernel + lora_kernel_a @ lora_kernel_b * lora_alpha
        / rank`, B starting at zero, so the outputs do not change until
        training moves it); every other backbone weight, the targets'
        kernels and biases included, stops training. A task's heads stay
        trainable. Saving (`.keras`, `save_to_preset`,
        `export_to_huggingface`) writes the merged kernels: the saved
        model is a plain BERT; `export_saved_model` serves the adapted
        outputs; `save_lora_weights` writes the adapters alone (and a
        task's heads), for `load_lora_weights` onto the base model. Enable
        LoRA before the task's first `fit` (or `compile` again after it:
        the optimizer was built for the old trainable weights).

        Args:
            rank: int. Rank of the adapters.
            target_names: sequence of str or None. Roles in each block:
                "query_key_value" (the default: the fused q, k, v
                projection, as many adapter weights as rank-`rank` LoRA on
                query and value), "attention_output", "intermediate",
                "output".
            lora_alpha: float or None. Scale numerator (None: `rank`).

        Example:
        >>> model = BertBackbone.from_preset("bert_tiny_uncased_config")
        >>> model.enable_lora(4)
        >>> [w.path.split("/")[-1] for w in model.trainable_weights][:2]
        ['lora_kernel_a', 'lora_kernel_b']
        """
        enable_lora(self, rank, target_names=target_names,
                    lora_alpha=lora_alpha)

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "dtype": keras.dtype_policies.serialize(dtype_for_config(self)),
            "vocabulary_size": self.vocabulary_size,
            "num_layers": self.num_layers,
            "num_heads": self.num_heads,
            "hidden_dim": self.hidden_dim,
            "intermediate_dim": self.intermediate_dim,
            "dropout": self.dropout,
            "max_sequence_length": self.max_sequence_length,
            "num_segments": self.num_segments,
            "attention_dropout": self.attention_dropout,
            "activation": self.activation,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "normalize_first": self.normalize_first,
            "initializer_range": self.initializer_range,
            "output_hidden_states": self.output_hidden_states,
            "output_attentions": self.output_attentions,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        # A config comes from a file: its sizes are checked before any
        # variable is made.
        check_backbone_arguments(config, f"{cls.__name__} config")
        if isinstance(config.get("dtype"), dict):
            config["dtype"] = keras.dtype_policies.deserialize(config["dtype"])
        return cls(**config)

    @classmethod
    def presets(cls):
        """Names `from_preset` takes besides a directory, with what each is.

        The named sizes (architecture only, random weights) and pretrained
        BERTs on the Hugging Face Hub that are known to load (see
        docs/checkpoints.md); any other BERT repository id, `hf://`
        handle, keras-hub preset name or `kaggle://` handle loads too.

        Returns:
            dict: name -> {"class", "description", "params", ...}, sorted
            by name.

        Example:
        >>> presets = BertBackbone.presets()
        >>> presets["google-bert/bert-base-uncased"]["params"]
        109482240
        >>> presets["tiny"]["description"]
        'Architecture only (random weights): 2 layers, hidden size 128'
        """
        sizes = {
            name: {"class": "BertBackbone", **config,
                   "description": (
                       "Architecture only (random weights): "
                       f"{config['num_layers']} layers, hidden size "
                       f"{config['hidden_dim']}")}
            for name, config in BACKBONE_CONFIGS.items()}
        table = {**sizes, **KNOWN_CHECKPOINTS}
        return {name: {**table[name], "params": parameter_count(**table[name])}
                for name in sorted(table)}

    @classmethod
    def from_preset(cls, preset, load_weights=True, **kwargs):
        """Builds a backbone from a pretrained model, a directory or a size.

        Args:
            preset: str. A Hugging Face id (`"google-bert/bert-base-uncased"`,
                `"bert-base-uncased"`, `"hf://ORG/NAME@REVISION"`), a
                keras-hub preset name (`"bert_base_en_uncased"`) or
                `kaggle://` handle, a local directory (a Hugging Face BERT
                folder, an original Google checkpoint folder, a keras_bert
                or keras-hub preset folder), or a named size (`"tiny"`,
                `"bert_base_uncased_config"`: random weights). See
                `BertBackbone.presets()` and
                `keras_bert.checkpoints.resolve_preset`: names are fetched
                into the Hugging Face or kagglehub cache once.
            load_weights: bool. Load the weights (True) or only the
                architecture.
            **kwargs: constructor arguments that override the config, e.g.
                `dtype="mixed_bfloat16"` or `dropout=0.0` (which also sets
                the attention dropout, unless the checkpoint has its own
                attention rate or `attention_dropout` is given).

        Example:
        >>> model = BertBackbone.from_preset("bert_tiny_uncased_config")
        >>> model.num_layers
        2
        """
        if preset in BACKBONE_CONFIGS and not os.path.isdir(preset):
            return cls(**{**get_backbone_config(preset), **kwargs})
        path = resolve_preset(
            preset, load_weights, kwargs.get("allow_pickle", False),
            sizes_hint=", or a size name (see BertBackbone.presets())")
        return load_backbone(cls, path, load_weights=load_weights, **kwargs)

    def save_to_preset(self, preset_dir):
        """Writes a keras_bert preset directory (config, weights, metadata).

        `BertBackbone.from_preset(preset_dir)` restores it on any backend.
        A backbone has no tokenizer; use
        `keras_bert.checkpoints.save_to_preset(model, dir, tokenizer=...)`
        to store one alongside.
        """
        save_to_preset(self, preset_dir)

    def predict_bucketed(self, x, batch_size=32, bucket_lengths=None):
        """Inference over many rows with little padding and few shapes.

        Rows are sorted by real length (last `padding_mask` position) and
        batched with their neighbours; each batch is cut to the smallest
        bucket length that holds its longest row and run with
        `predict_on_batch`. Short rows then stop paying for the full padded
        length (cost grows with length, attention quadratically), and XLA
        (JAX, TensorFlow with `jit_compile`) compiles one program per
        bucket instead of one per length. When there are more rows than
        `batch_size`, the last batch is filled up with repeated rows so
        every call has the same batch size.

        Args:
            x: dict of `token_ids`, `segment_ids`, `padding_mask`, each
                `(num_rows, length)`, e.g. a `BertPreprocessor` output.
            batch_size: int. Rows per model call.
            bucket_lengths: list of int or None. Allowed padded lengths;
                None means multiples of 8 up to 64, of 16 up to 128,
                then of 32 (`bucketed_inference.default_bucket_lengths`),
                and on eager PyTorch (nothing compiled per shape) each
                batch's longest row. The input length is always the last
                bucket.

        Returns:
            The model's outputs as NumPy, in input order and at the input
            length; positions that were padding in `x` are 0 in
            `sequence_output` and `hidden_states` (and attentions).

        Example:
        >>> import numpy as np
        >>> model = BertBackbone(vocabulary_size=100, num_layers=1,
        ...                      num_heads=2, hidden_dim=8, intermediate_dim=16)
        >>> x = {"token_ids": np.array([[2, 5, 3, 0], [2, 3, 0, 0]]),
        ...      "segment_ids": np.zeros((2, 4), "int32"),
        ...      "padding_mask": np.array([[1, 1, 1, 0], [1, 1, 0, 0]])}
        >>> model.predict_bucketed(x, bucket_lengths=[2])["sequence_output"].shape
        (2, 4, 8)
        """
        return predict_bucketed(self, x, batch_size=batch_size,
                                bucket_lengths=bucket_lengths)
