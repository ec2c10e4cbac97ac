"""keras_bert: BERT for Keras 3 on TensorFlow, JAX and PyTorch.

The model classes import with Keras alone. Preprocessing, export and the
training pipeline are TensorFlow graph code: their names are imported on
first use, so `import keras_bert` under `KERAS_BACKEND=jax` or `torch`
does not load TensorFlow until a tokenizer or a SavedModel is asked for.
"""

import importlib

from keras_bert import layers
from keras_bert.configs import BACKBONE_CONFIGS
from keras_bert.models.bert_backbone import BertBackbone
from keras_bert.models.bert_classifier import BertClassifier
from keras_bert.models.bert_cross_encoder import BertCrossEncoder
from keras_bert.models.bert_multiple_choice import BertMultipleChoice
from keras_bert.models.bert_pretrainer import BertPretrainer
from keras_bert.models.bert_question_answerer import BertQuestionAnswerer
from keras_bert.models.bert_text_embedder import BertTextEmbedder
from keras_bert.models.bert_token_classifier import BertTokenClassifier
from keras_bert.version import __version__

# Public name -> module that defines it, imported on first access.
_LAZY = {
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
        "keras_bert.training.multiple_negatives_ranking_loss",
    "export_saved_model": "keras_bert.export.saved_model_export",
    "export_onnx": "keras_bert.export.onnx_export",
    "export_to_huggingface": "keras_bert.checkpoints.saving",
    "save_to_preset": "keras_bert.checkpoints.saving",
    "CheckpointError": "keras_bert.checkpoints.checkpoint_error",
    "create_optimizer": "keras_bert.training.optimizers",
    "fill_mask": "keras_bert.training.fill_mask",
    "plot_attention": "keras_bert.visualization.plot_attention",
    "attention_map": "keras_bert.visualization.plot_attention",
}

__all__ = sorted(
    [
        "layers",
        "BACKBONE_CONFIGS",
        "BertBackbone",
        "BertClassifier",
        "BertCrossEncoder",
        "BertMultipleChoice",
        "BertPretrainer",
        "BertQuestionAnswerer",
        "BertTextEmbedder",
        "BertTokenClassifier",
        "__version__",
    ]
    + list(_LAZY)
)


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'keras_bert' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
