"""Fill-mask inference with a pretrained `BertPretrainer`."""

import numpy as np
from keras import ops


def fill_mask(model, tokenizer, text, top_k=5):
    """Predicts the tokens hidden behind each `[MASK]` in `text`.

    The text around the masks is tokenized (so "[MASK]" is recognized
    whatever the casing rules) and packed as `[CLS] ... [SEP]`; the MLM
    head runs at the mask positions only.

    Args:
        model: a `BertPretrainer`.
        tokenizer: the `BertTokenizer` of its vocabulary.
        text: str. Text with one or more `[MASK]` (the tokenizer's
            `mask_token`).
        top_k: int. Candidates per mask.

    Returns:
        One list per mask, in order: `top_k` `(token, probability)` pairs,
        most likely first.

    Example:
    >>> fill_mask(model, tokenizer, "the cat sat on the [MASK].")  # doctest: +SKIP
    [[('floor', 0.21), ('mat', 0.12), ...]]
    """
    return [top_tokens(row, tokenizer, top_k)
            for row in mask_probabilities(model, tokenizer, text)]


def top_tokens(probabilities, tokenizer, top_k):
    """The `top_k` `(token, probability)` pairs of one row, most likely
    first."""
    best = np.argsort(-probabilities)[:top_k]
    return [(tokenizer.id_to_token(int(i)), float(probabilities[i]))
            for i in best]


def mask_probabilities(model, tokenizer, text):
    """`fill_mask`'s whole distribution: one row of probabilities over
    the vocabulary per `[MASK]` in `text`, in order (float64 NumPy,
    `(masks, vocabulary_size)`)."""
    mask = tokenizer.mask_token
    pieces = text.split(mask)
    if len(pieces) < 2:
        raise ValueError(
            f"The text has no {mask} token to fill: {text!r}. Put {mask} "
            "where a word should be predicted."
        )
    tokenized = tokenizer.tokenize(pieces).to_list()
    token_ids = [tokenizer.cls_token_id]
    for index, piece in enumerate(tokenized):
        if index:
            token_ids.append(tokenizer.mask_token_id)
        token_ids.extend(piece)
    token_ids.append(tokenizer.sep_token_id)
    limit = model.backbone.max_sequence_length
    if len(token_ids) > limit:
        raise ValueError(
            f"The text is {len(token_ids)} tokens long with [CLS] and [SEP]; "
            f"the model takes at most {limit}. Shorten it."
        )
    positions = [i for i, t in enumerate(token_ids)
                 if t == tokenizer.mask_token_id]
    length = len(token_ids)
    inputs = {
        "token_ids": np.array([token_ids], "int32"),
        "segment_ids": np.zeros((1, length), "int32"),
        "padding_mask": np.ones((1, length), "int32"),
        "mask_positions": np.array([positions], "int32"),
    }
    logits = ops.convert_to_numpy(model(inputs, training=False)["mlm_logits"])
    logits = logits[0].astype("float64")
    probabilities = np.exp(logits - logits.max(-1, keepdims=True))
    probabilities /= probabilities.sum(-1, keepdims=True)
    return probabilities
