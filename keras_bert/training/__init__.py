"""Training: the pretraining pipeline, callbacks, evaluation, distribution.

Names are imported on first use, so that naming one does not load the
TensorFlow data pipeline. The optimizers live in `keras_bert.optimizers`
(the task models compile with them); their names are importable from
here too.
"""

import importlib

_EXPORTS = {
    # Moved to keras_bert.optimizers; still importable from here.
    "AdamW": "keras_bert.optimizers.adamw",
    "WarmupLinearDecay": "keras_bert.optimizers.warmup_linear_decay",
    "create_optimizer": "keras_bert.optimizers.bert_optimizer",
    "resize_schedule": "keras_bert.optimizers.bert_optimizer",
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
    "PretrainingSettings": "pretraining.pretraining_settings",
    "StepBudget": "pretraining.step_budget",
    "MultipleNegativesRankingLoss":
        "keras_bert.losses.multiple_negatives_ranking_loss",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    path = _EXPORTS[name]
    if not path.startswith("keras_bert."):
        path = f"{__name__}.{path}"
    module = importlib.import_module(path)
    return getattr(module, name)
