"""keras_bert: BERT for Keras 3 on TensorFlow, JAX and PyTorch.

Every public name is imported on first use, so `import keras_bert` loads
neither Keras nor TensorFlow: the `keras-bert` command answers `--help` at
once, and under `KERAS_BACKEND=jax` or `torch` TensorFlow loads only when a
tokenizer, the data pipeline or a SavedModel is asked for. Keras still finds
every keras_bert class when it loads a `.keras` file or a preset:
`serialization.register_when_keras_imports` lists them in Keras' registry
as soon as Keras is imported.

Importing it also lets glibc's malloc keep freed memory for reuse
(`tune_malloc`; `KERAS_BERT_TUNE_MALLOC=0` opts out): done here, before
Keras starts a backend's threads, because a thread keeps the allocator
arena it first used.
"""

import importlib

from keras_bert import serialization
from keras_bert.memory import tune_malloc
from keras_bert.memory import tune_malloc_unless_opted_out
from keras_bert.version import __version__

# Public name -> module that defines it (or the subpackage itself),
# imported on first access.
_LAZY = {
    # Sub-packages, so that `keras_bert.training.batch_pairs` works after
    # `import keras_bert` alone.
    **{name: f"keras_bert.{name}" for name in (
        "checkpoints", "export", "layers", "losses", "metrics", "models",
        "optimizers", "preprocessing", "training", "visualization")},
    "BACKBONE_CONFIGS": "keras_bert.configs",
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
    "NextSentencePairBuilder":
        "keras_bert.preprocessing.next_sentence_pair_builder",
    "train_vocabulary": "keras_bert.preprocessing.train_vocabulary",
    "BertTokenClassifierPreprocessor":
        "keras_bert.preprocessing.tasks.bert_token_classifier_preprocessor",
    "BertQuestionAnswererPreprocessor":
        "keras_bert.preprocessing.tasks.bert_question_answerer_preprocessor",
    "BertMultipleChoicePreprocessor":
        "keras_bert.preprocessing.tasks.bert_multiple_choice_preprocessor",
    "BertCrossEncoderPreprocessor":
        "keras_bert.preprocessing.tasks.bert_cross_encoder_preprocessor",
    "BertTextEmbedderPreprocessor":
        "keras_bert.preprocessing.tasks.bert_text_embedder_preprocessor",
    "MultipleNegativesRankingLoss":
        "keras_bert.losses.multiple_negatives_ranking_loss",
    "SparseLogitsCrossentropy":
        "keras_bert.losses.sparse_logits_crossentropy",
    "SparseLogitsAccuracy": "keras_bert.metrics.sparse_logits_accuracy",
    "export_saved_model": "keras_bert.export.saved_model_export",
    "export_onnx": "keras_bert.export.onnx_export",
    "export_to_huggingface": "keras_bert.checkpoints.saving",
    "save_to_preset": "keras_bert.checkpoints.saving",
    "CheckpointError": "keras_bert.checkpoints.checkpoint_error",
    "create_optimizer": "keras_bert.optimizers.bert_optimizer",
    "fill_mask": "keras_bert.training.fill_mask",
    "plot_attention": "keras_bert.visualization.plot_attention",
    "attention_map": "keras_bert.visualization.plot_attention",
}

__all__ = sorted(["__version__", "tune_malloc"] + list(_LAZY))

tune_malloc_unless_opted_out()
serialization.register_when_keras_imports()


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'keras_bert' has no attribute {name!r}")
    module = importlib.import_module(_LAZY[name])
    value = module if module.__name__ == f"{__name__}.{name}" else getattr(
        module, name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
