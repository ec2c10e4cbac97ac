"""A task's preprocessor packs no more tokens than its backbone has
positions.

A `BertPreprocessor(tokenizer, sequence_length=600)` on a model of 512
positions was accepted and failed at the first `predict`, deep in an
embedding lookup; it is refused where the two meet: the task's
constructor and `from_preset`.
"""


def check_sequence_length(preprocessor, backbone):
    """Raises `ValueError` when `preprocessor.sequence_length` exceeds
    `backbone.max_sequence_length`.

    Example:
    >>> backbone = keras_bert.BertBackbone(vocabulary_size=10, num_layers=1,
    ...     num_heads=2, hidden_dim=8, intermediate_dim=16,
    ...     max_sequence_length=16)
    >>> preprocessor = keras_bert.BertPreprocessor(keras_bert.BertTokenizer(
    ...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]), sequence_length=32)
    >>> check_sequence_length(preprocessor, backbone)
    Traceback (most recent call last):
    ...
    ValueError: The preprocessor packs sequence_length=32 tokens but the backbone has max_sequence_length=16 positions; pass sequence_length=16 or less.
    """
    length = getattr(preprocessor, "sequence_length", None)
    positions = getattr(backbone, "max_sequence_length", None)
    if isinstance(length, int) and positions and length > positions:
        raise ValueError(
            f"The preprocessor packs sequence_length={length} tokens but "
            f"the backbone has max_sequence_length={positions} positions; "
            f"pass sequence_length={positions} or less.")
