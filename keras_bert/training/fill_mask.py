"""Fill-mask inference with a pretrained `BertPretrainer`."""

import keras
import numpy as np
from keras import ops

from keras_bert.preprocessing.host_preprocessing import token_id_lists


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
    return batch_mask_probabilities(model, tokenizer, [text])[0]


def batch_mask_probabilities(model, tokenizer, texts, batch_size=64):
    """`mask_probabilities` of many texts: one tokenizer call for all of
    them and one model call per `batch_size` texts, each batch padded to
    its longest text. The padding mask keeps the padding out of the
    attention, so each text's rows equal `mask_probabilities` of it alone
    up to float rounding (GEMMs of another shape).

    Args:
        model: a `BertPretrainer`.
        tokenizer: the `BertTokenizer` of its vocabulary.
        texts: list of str, each with one or more `[MASK]`.
        batch_size: int. Texts per model call.

    Returns:
        A list with one float64 array `(masks, vocabulary_size)` per text.

    Example:
    >>> rows = batch_mask_probabilities(  # doctest: +SKIP
    ...     model, tokenizer, ["the [MASK] sat.", "a [MASK] of [MASK]."])
    >>> [row.shape[0] for row in rows]  # doctest: +SKIP
    [1, 2]
    """
    if not texts:
        return []
    mask = tokenizer.mask_token
    split = [text.split(mask) for text in texts]
    for text, pieces in zip(texts, split):
        if len(pieces) < 2:
            raise ValueError(
                f"The text has no {mask} token to fill: {text!r}. Put "
                f"{mask} where a word should be predicted."
            )
    tokenized = token_id_lists(
        tokenizer, [piece for pieces in split for piece in pieces])
    limit = model.backbone.max_sequence_length
    sequences, start = [], 0
    for pieces in split:
        token_ids = [tokenizer.cls_token_id]
        for index, piece in enumerate(tokenized[start:start + len(pieces)]):
            if index:
                token_ids.append(tokenizer.mask_token_id)
            token_ids.extend(piece)
        token_ids.append(tokenizer.sep_token_id)
        start += len(pieces)
        if len(token_ids) > limit:
            raise ValueError(
                f"The text is {len(token_ids)} tokens long with [CLS] and "
                f"[SEP]; the model takes at most {limit}. Shorten it."
            )
        sequences.append(token_ids)
    rows = []
    for first in range(0, len(sequences), batch_size):
        rows.extend(_predict_masks(model, tokenizer,
                                   sequences[first:first + batch_size]))
    return rows


def _predict_masks(model, tokenizer, sequences):
    length = max(map(len, sequences))
    positions = [[i for i, t in enumerate(ids)
                  if t == tokenizer.mask_token_id] for ids in sequences]
    masks = max(map(len, positions))
    token_ids = np.full((len(sequences), length), tokenizer.pad_token_id,
                        "int32")
    padding_mask = np.zeros((len(sequences), length), "int32")
    # A shorter row's extra mask slots read [CLS] and are dropped below.
    mask_positions = np.zeros((len(sequences), masks), "int32")
    for row, (ids, places) in enumerate(zip(sequences, positions)):
        token_ids[row, :len(ids)] = ids
        padding_mask[row, :len(ids)] = 1
        mask_positions[row, :len(places)] = places
    inputs = {
        "token_ids": token_ids,
        "segment_ids": np.zeros_like(token_ids),
        "padding_mask": padding_mask,
        "mask_positions": mask_positions,
    }
    logits = ops.convert_to_numpy(_mask_logits(model, inputs))
    logits = logits.astype("float64")
    probabilities = np.exp(logits - logits.max(-1, keepdims=True))
    probabilities /= probabilities.sum(-1, keepdims=True)
    return [probabilities[row, :len(places)]
            for row, places in enumerate(positions)]


def _mask_logits(model, inputs):
    # Each batch is padded to its own longest text, so a compiled call
    # compiles again for almost every batch. TensorFlow's eager calls run
    # the same kernels without compiling; JAX's eager calls compile every
    # operation for every shape, more than one whole-model compilation.
    if keras.config.backend() == "tensorflow":
        return model(inputs, training=False)["mlm_logits"]
    return model.predict_on_batch(inputs)["mlm_logits"]
