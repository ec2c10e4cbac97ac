"""Reading a sentence-transformers directory for `BertTextEmbedder`.

A sentence-transformers model directory lists its modules in
`modules.json`, in order; keras_bert reads the three a BERT bi-encoder
uses: a Transformer (the BERT checkpoint, in the module's `path`, "" for
the directory itself, with `sentence_bert_config.json`), a Pooling
(`1_Pooling/config.json`) and optionally a Normalize. Any other module
(Dense, LayerNorm, a Router...) changes the vectors in a way keras_bert
does not reproduce, so it is refused by name rather than skipped. A
module's `path` must stay inside the directory (`confined_paths`).
"""

import collections
import os

from keras_bert.checkpoints.checkpoint_error import CheckpointError
from keras_bert.checkpoints.checkpoint_files import read_json
from keras_bert.checkpoints.confined_paths import confined_path

MODULES_FILE = "modules.json"
SUPPORTED = ("Transformer", "Pooling", "Normalize")
# Pooling modes of sentence-transformers (new and pre-v5 keys) -> ours.
_MODES = {"mean": "mean", "cls": "cls", "max": "max"}
_LEGACY_MODE_KEYS = {
    "pooling_mode_cls_token": "cls",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens": "weightedmean",
    "pooling_mode_lasttoken": "lasttoken",
}


class SentenceTransformersConfig(collections.namedtuple(
        "SentenceTransformersConfig",
        "transformer_dir pooling normalize max_seq_length lowercase "
        "dimension source")):
    """What `BertTextEmbedder.from_preset` needs from the directory."""

    def check_dimension(self, hidden_dim):
        if self.dimension is not None and self.dimension != hidden_dim:
            raise CheckpointError(
                f"{self.source}: the Pooling module expects vectors of "
                f"{self.dimension} values but the BERT model's hidden size "
                f"is {hidden_dim}.")


def _module_class(entry):
    # "sentence_transformers.models.Pooling" (v2-v4) or
    # "sentence_transformers.sentence_transformer.modules.pooling.Pooling".
    kind = str(entry.get("type", ""))
    name = kind.rsplit(".", 1)[-1]
    if kind.startswith("sentence_transformers.") and name in SUPPORTED:
        return name
    return None


def _pooling_mode(config, source):
    mode = config.get("pooling_mode")
    if mode is None:
        modes = [value for key, value in _LEGACY_MODE_KEYS.items()
                 if config.get(key)]
        mode = modes if len(modes) != 1 else modes[0]
        mode = mode or "mean"
    if isinstance(mode, (list, tuple)):
        mode = mode[0] if len(mode) == 1 else list(mode)
    if not isinstance(mode, str) or mode not in _MODES:
        raise CheckpointError(
            f"{source}: pooling mode {mode!r} is not supported by "
            f"BertTextEmbedder (it pools with {', '.join(_MODES)}).")
    return _MODES[mode]


def read_sentence_transformers_config(directory):
    """The directory's sentence-transformers setup, or None without one.

    Returns a `SentenceTransformersConfig` (`transformer_dir`, `pooling`,
    `normalize`, `max_seq_length`, `lowercase`, `dimension`, `source`).
    Raises `CheckpointError` naming the module when one is not a
    Transformer, Pooling or Normalize, or when they are out of order.
    """
    modules_file = os.path.join(directory, MODULES_FILE)
    if not os.path.isfile(modules_file):
        return None
    modules = read_json(modules_file)
    if not isinstance(modules, list) or not all(
            isinstance(entry, dict) for entry in modules):
        raise CheckpointError(f"{modules_file} must hold a list of modules.")
    kinds = []
    for entry in sorted(modules, key=lambda item: item.get("idx", 0)):
        kind = _module_class(entry)
        if kind is None:
            raise CheckpointError(
                f"{modules_file}: module {entry.get('name', '?')!r} "
                f"(path {entry.get('path', '')!r}) is "
                f"{entry.get('type')!r}, which BertTextEmbedder does not "
                f"support; it reads {', '.join(SUPPORTED)} modules only.")
        kinds.append((kind, entry))
    order = [kind for kind, _ in kinds]
    if order not in (["Transformer", "Pooling"],
                     ["Transformer", "Pooling", "Normalize"]):
        raise CheckpointError(
            f"{modules_file} lists modules {order}; BertTextEmbedder reads "
            "Transformer, Pooling and an optional Normalize, in that order.")
    entries = dict(kinds)
    transformer_dir, pooling_dir = (
        confined_path(directory, entries[kind].get("path", ""),
                      f"{modules_file} ({kind} path)")
        for kind in ("Transformer", "Pooling"))
    bert_config_file = os.path.join(transformer_dir,
                                    "sentence_bert_config.json")
    bert_config = read_json(bert_config_file) if os.path.isfile(
        bert_config_file) else {}
    pooling_file = os.path.join(pooling_dir, "config.json")
    if not os.path.isfile(pooling_file):
        raise CheckpointError(
            f"{modules_file} lists a Pooling module but {pooling_file} is "
            "missing.")
    pooling = read_json(pooling_file)
    dimension = pooling.get("embedding_dimension",
                            pooling.get("word_embedding_dimension"))
    return SentenceTransformersConfig(
        transformer_dir=transformer_dir,
        pooling=_pooling_mode(pooling, pooling_file),
        normalize="Normalize" in entries,
        max_seq_length=bert_config.get("max_seq_length"),
        lowercase=bool(bert_config.get("do_lower_case", False)),
        dimension=dimension,
        source=pooling_file,
    )
