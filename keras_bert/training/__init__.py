"""Pretraining: optimizer and schedule, data pipeline, callbacks, evaluation.

Names are imported on first use: `keras_bert.models` needs the optimizer
(keras only) without loading the TensorFlow data pipeline.
"""

import importlib

_EXPORTS = {
    "AdamW": "adamw",
    "WarmupLinearDecay": "warmup_linear_decay",
    "create_optimizer": "optimizers",
    "TextCorpus": "pretraining.text_corpus",
    "python_docs_documents": "pretraining.python_docs_corpus",
    "write_sentences_file": "pretraining.python_docs_corpus",
    "pair_dataset": "pretraining.pretraining_data",
    "batch_pairs": "pretraining.pretraining_data",
    "tokenize_documents": "pretraining.pretraining_data",
    "write_pair_shards": "pretraining.pair_shards",
    "read_pair_shards": "pretraining.pair_shards",
    "PretrainingCheckpoint": "pretraining.pretraining_checkpoint",
    "PretrainingLogger": "pretraining.pretraining_logger",
    "plot_loss_curves": "loss_curves",
    "plot_finetuning_curves": "loss_curves",
    "unigram_counts": "pretraining.pretraining_evaluation",
    "evaluate_pretraining": "pretraining.pretraining_evaluation",
    "fill_mask": "fill_mask",
    "PretrainingJob": "pretraining.pretraining_job",
    "MultipleNegativesRankingLoss": "multiple_negatives_ranking_loss",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(f"{__name__}.{_EXPORTS[name]}")
    return getattr(module, name)
