"""Keras finds keras_bert classes whose module is not imported yet.

`import keras_bert` imports its classes on first use, but Keras looks a
custom class up in its registry, which `register_keras_serializable` fills
only when the class's module runs. So that `keras.saving.load_model` finds
every keras_bert class once keras_bert has met Keras, importing this module
puts a stand-in per class into Keras' registry (its own `keras_bert>`
names, nothing else); a stand-in imports its class when Keras builds an
object from it, and the class's decorator then replaces it.

keras_bert meets Keras when it is imported after Keras, when any of its
public names is first used, or when any of its modules that build or load
models is imported: each of them imports this module. (`import keras_bert`
alone does not import Keras, so that the `keras-bert` command starts
without a backend; it changes nothing in the import system either.)
keras_bert's own `from_config` methods deserialize nested objects with
`deserialize`.
"""

import importlib

import keras

from keras_bert.tasks.builtin_tasks import BUILTIN_TASKS
from keras_bert.tasks.registry import class_modules

# Class name -> module, for every class decorated with
# `keras.saving.register_keras_serializable(package="keras_bert")`
# (tests/test_serialization.py checks the list is complete): the models
# and their preprocessors from their task records, and the classes they
# are built of. Functions registered beside a class (BertQuestionAnswerer's
# span loss and metric) are registered with it, before a compiled model's
# compile config loads.
REGISTERED_CLASSES = {
    **class_modules(BUILTIN_TASKS),
    "BertEmbeddings": "keras_bert.layers.bert_embeddings",
    "BertInitializer": "keras_bert.layers.bert_initializer",
    "FusedDense": "keras_bert.layers.fused_dense",
    "FusedLayerNormalization": "keras_bert.layers.fused_layer_normalization",
    "FusedQueryKeyValue": "keras_bert.layers.fused_query_key_value",
    "SentencePooling": "keras_bert.layers.sentence_pooling",
    "MaskedLMHead": "keras_bert.layers.masked_lm_head",
    "MultiHeadSelfAttention": "keras_bert.layers.multi_head_self_attention",
    "TransformerEncoderBlock": "keras_bert.layers.transformer_encoder_block",
    "BertTokenizer": "keras_bert.preprocessing.bert_tokenizer",
    "BertPacker": "keras_bert.preprocessing.bert_packer",
    "Preprocessor": "keras_bert.preprocessing.preprocessor",
    "MaskedLMMasker": "keras_bert.preprocessing.masked_lm_masker",
    "MultipleNegativesRankingLoss":
        "keras_bert.losses.multiple_negatives_ranking_loss",
    "SparseLogitsCrossentropy":
        "keras_bert.losses.sparse_logits_crossentropy",
    "SparseLogitsAccuracy": "keras_bert.metrics.sparse_logits_accuracy",
    "AdamW": "keras_bert.optimizers.adamw",
    "WarmupLinearDecay": "keras_bert.optimizers.warmup_linear_decay",
}


def import_config_module(config):
    """Imports the keras_bert module a serialized `config` names, if any.

    A module that has moved since the config was written is skipped: the
    class is then found by its registered name (`REGISTERED_CLASSES`).
    """
    module = config.get("module") or ""
    if module.startswith("keras_bert."):
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as error:
            if not module.startswith(error.name or "\0"):
                raise
    return config


def deserialize(config):
    """`keras.saving.deserialize_keras_object` for keras_bert objects."""
    return keras.saving.deserialize_keras_object(import_config_module(config))


class _DeferredClass:
    """A keras_bert class in Keras' registry before its module is imported.

    `keras.saving.deserialize_keras_object` only calls `from_config` on what
    the registry holds; this imports the class and calls its own.
    """

    def __init__(self, module, name):
        self.module = module
        self.name = name

    def from_config(self, config):
        cls = getattr(importlib.import_module(self.module), self.name)
        return cls.from_config(config)

    def __repr__(self):
        return f"<keras_bert class {self.module}.{self.name}, not imported>"


def register_classes():
    """Puts a stand-in for every keras_bert class not yet imported into
    Keras' registry (a class already imported keeps its real entry)."""
    registry = keras.saving.get_custom_objects()
    for name, module in REGISTERED_CLASSES.items():
        registry.setdefault(f"keras_bert>{name}", _DeferredClass(module, name))


register_classes()
