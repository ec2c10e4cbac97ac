"""Named BERT sizes (architecture only, no weights).

The sizes of the paper (base, large) and of the official smaller BERTs
(Turc et al., 2019: tiny, mini, small, medium). Intermediate width is
4 x hidden and the WordPiece vocabulary has 30,522 ids (uncased) or 28,996
(cased), as in the released checkpoints.
"""

_SIZES = {
    # name: (num_layers, hidden_dim, num_heads)
    "tiny": (2, 128, 2),
    "mini": (4, 256, 4),
    "small": (4, 512, 8),
    "medium": (8, 512, 8),
    "base": (12, 768, 12),
    "large": (24, 1024, 16),
}
_VOCAB_SIZES = {"uncased": 30522, "cased": 28996}


def _config(size, casing):
    num_layers, hidden_dim, num_heads = _SIZES[size]
    return {
        "vocabulary_size": _VOCAB_SIZES[casing],
        "num_layers": num_layers,
        "num_heads": num_heads,
        "hidden_dim": hidden_dim,
        "intermediate_dim": 4 * hidden_dim,
        "dropout": 0.1,
        "max_sequence_length": 512,
        "num_segments": 2,
    }


BACKBONE_CONFIGS = {
    f"bert_{size}_{casing}_config": _config(size, casing)
    for size in _SIZES
    for casing in _VOCAB_SIZES
}
# Short names (`--config mini` on the command line) mean the uncased size.
BACKBONE_CONFIGS.update(
    {size: _config(size, "uncased") for size in _SIZES}
)


def get_backbone_config(name):
    """Returns a copy of a named config; a clear error for unknown names."""
    if name not in BACKBONE_CONFIGS:
        raise ValueError(
            f"Unknown BERT config {name!r}. Known names: "
            f"{', '.join(sorted(BACKBONE_CONFIGS))}, or a preset directory."
        )
    return dict(BACKBONE_CONFIGS[name])
