"""keras_bert: BERT for Keras 3 on TensorFlow, JAX and PyTorch.

Every public name is imported on first use, so `import keras_bert` loads
neither Keras nor TensorFlow: the `keras-bert` command answers `--help` at
once, and under `KERAS_BACKEND=jax` or `torch` TensorFlow loads only when a
tokenizer, the data pipeline or a SavedModel is asked for.

Importing it changes nothing in the process: no allocator setting, no
import hook, no Keras function replaced. Keras finds every keras_bert class
when it loads a `.keras` file once keras_bert has met Keras: imported after
Keras, or once a keras_bert name is used (`keras_bert.serialization`).
`tune_malloc` is an explicit call (the `keras-bert` commands make it).
"""

import importlib
import sys

from keras_bert.memory import tune_malloc
from keras_bert.tasks.builtin_tasks import BUILTIN_TASKS
from keras_bert.tasks.registry import class_modules
from keras_bert.version import __version__

# Public name -> module that defines it (or the subpackage itself),
# imported on first access.
_LAZY = {
    # Sub-packages, so that `keras_bert.training.batch_pairs` works after
    # `import keras_bert` alone.
    **{name: f"keras_bert.{name}" for name in (
        "checkpoints", "export", "layers", "losses", "metrics", "models",
        "optimizers", "preprocessing", "tasks", "training",
        "visualization")},
    "BACKBONE_CONFIGS": "keras_bert.configs",
    "BertTokenizer": "keras_bert.preprocessing.bert_tokenizer",
    "BertPacker": "keras_bert.preprocessing.bert_packer",
    "Preprocessor": "keras_bert.preprocessing.preprocessor",
    "MaskedLMMasker": "keras_bert.preprocessing.masked_lm_masker",
    "NextSentencePairBuilder":
        "keras_bert.preprocessing.next_sentence_pair_builder",
    "train_vocabulary": "keras_bert.preprocessing.train_vocabulary",
    # The models and their preprocessors, from their task records.
    **class_modules(BUILTIN_TASKS),
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


def _register_classes_with_keras():
    # Only once Keras is loaded: importing it here would load a backend.
    if "keras" in sys.modules:
        importlib.import_module("keras_bert.serialization")


_register_classes_with_keras()


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'keras_bert' has no attribute {name!r}")
    module = importlib.import_module(_LAZY[name])
    _register_classes_with_keras()
    value = module if module.__name__ == f"{__name__}.{name}" else getattr(
        module, name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
