"""Keras finds keras_bert classes whose module is not imported yet.

`import keras_bert` imports its classes on first use, but Keras looks a
custom class up in its registry, which `register_keras_serializable` fills
only when the class's module runs. So that `keras.saving.load_model` finds
every keras_bert class after a bare `import keras_bert`, in a fresh process,
`register_when_keras_imports` puts a stand-in per class into the registry as
soon as Keras is imported; a stand-in imports its class when Keras builds an
object from it, and the class's decorator then replaces it. keras_bert's own
`from_config` methods deserialize nested objects with `deserialize`.
"""

import importlib
import importlib.abc
import importlib.util
import sys

# Class name -> module, for every class decorated with
# `keras.saving.register_keras_serializable(package="keras_bert")`
# (tests/test_serialization.py checks the list is complete). Functions
# registered beside a class (BertQuestionAnswerer's span loss and metric)
# are registered with it, before a compiled model's compile config loads.
REGISTERED_CLASSES = {
    "BertEmbeddings": "keras_bert.layers.bert_embeddings",
    "FusedDense": "keras_bert.layers.fused_dense",
    "FusedLayerNormalization": "keras_bert.layers.fused_layer_normalization",
    "FusedQueryKeyValue": "keras_bert.layers.fused_query_key_value",
    "SentencePooling": "keras_bert.layers.sentence_pooling",
    "MaskedLMHead": "keras_bert.layers.masked_lm_head",
    "MultiHeadSelfAttention": "keras_bert.layers.multi_head_self_attention",
    "TransformerEncoderBlock": "keras_bert.layers.transformer_encoder_block",
    "BertBackbone": "keras_bert.models.bert_backbone",
    "BertClassifier": "keras_bert.models.bert_classifier",
    "BertCrossEncoder": "keras_bert.models.bert_cross_encoder",
    "BertTextEmbedder": "keras_bert.models.bert_text_embedder",
    "BertMultipleChoice": "keras_bert.models.bert_multiple_choice",
    "BertPretrainer": "keras_bert.models.bert_pretrainer",
    "BertQuestionAnswerer": "keras_bert.models.bert_question_answerer",
    "BertTokenClassifier": "keras_bert.models.bert_token_classifier",
    "BertTokenizer": "keras_bert.preprocessing.bert_tokenizer",
    "BertPacker": "keras_bert.preprocessing.bert_packer",
    "BertPreprocessor": "keras_bert.preprocessing.bert_preprocessor",
    "BertMaskedLMPreprocessor":
        "keras_bert.preprocessing.bert_masked_lm_preprocessor",
    "Preprocessor": "keras_bert.preprocessing.preprocessor",
    "MaskedLMMasker": "keras_bert.preprocessing.masked_lm_masker",
    "BertTokenClassifierPreprocessor":
        "keras_bert.preprocessing.tasks.bert_token_classifier_preprocessor",
    "BertQuestionAnswererPreprocessor":
        "keras_bert.preprocessing.tasks.bert_question_answerer_preprocessor",
    "BertCrossEncoderPreprocessor":
        "keras_bert.preprocessing.tasks.bert_cross_encoder_preprocessor",
    "BertTextEmbedderPreprocessor":
        "keras_bert.preprocessing.tasks.bert_text_embedder_preprocessor",
    "MultipleNegativesRankingLoss":
        "keras_bert.losses.multiple_negatives_ranking_loss",
    "SparseLogitsCrossentropy":
        "keras_bert.losses.sparse_logits_crossentropy",
    "SparseLogitsAccuracy": "keras_bert.metrics.sparse_logits_accuracy",
    "BertMultipleChoicePreprocessor":
        "keras_bert.preprocessing.tasks.bert_multiple_choice_preprocessor",
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
    import keras

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


def _register_deferred_classes(keras):
    registry = keras.saving.get_custom_objects()
    for name, module in REGISTERED_CLASSES.items():
        # setdefault: a class already imported keeps its real entry.
        registry.setdefault(f"keras_bert>{name}", _DeferredClass(module, name))


class _AfterKerasImport(importlib.abc.MetaPathFinder):
    """Registers the stand-ins right after `keras` is first imported.

    It answers the lookup of `keras` with the spec the other finders give,
    its loader made to register the stand-ins after running
    `keras/__init__.py`, whichever code imports Keras first. It stays in
    place until Keras has really been executed: a mere
    `importlib.util.find_spec("keras")` (availability checks, e.g. in
    transformers) must not use it up.
    """

    def find_spec(self, fullname, path, target=None):
        if fullname != "keras":
            return None
        sys.meta_path.remove(self)  # the other finders answer the lookup
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(0, self)
        if spec is not None and spec.loader is not None:
            exec_module = spec.loader.exec_module

            def exec_and_register(module):
                exec_module(module)
                if self in sys.meta_path:
                    sys.meta_path.remove(self)
                _register_deferred_classes(module)

            spec.loader.exec_module = exec_and_register
        return spec


def register_when_keras_imports():
    """Makes Keras find every keras_bert class, now or once Keras loads."""
    keras = sys.modules.get("keras")
    if keras is not None:
        _register_deferred_classes(keras)
    elif not any(isinstance(finder, _AfterKerasImport)
                 for finder in sys.meta_path):
        sys.meta_path.insert(0, _AfterKerasImport())
