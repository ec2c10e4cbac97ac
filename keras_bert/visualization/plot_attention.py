"""Attention maps: which tokens each token attends to, per layer and head."""

import numpy as np
from keras import ops

from keras_bert.models.bert_backbone import BertBackbone


def _backbone_of(model):
    # Task models (classifier, pretrainer, ...) keep their encoder in
    # `.backbone`; the attention lives there.
    backbone = getattr(model, "backbone", model)
    if not isinstance(backbone, BertBackbone):
        raise TypeError(
            "`model` must be a keras_bert.BertBackbone or a task model with a "
            f"`.backbone`; got {type(model).__name__}."
        )
    return backbone


def _with_attentions(backbone):
    # Attention probabilities are an output only when asked for at build
    # time (the fast path never materializes them), so a backbone built
    # without them is cloned once with them, sharing the same weights.
    if backbone.output_attentions:
        return backbone
    config = backbone.get_config()
    config["output_attentions"] = True
    clone = BertBackbone.from_config(config)
    clone.set_weights(backbone.get_weights())
    return clone


def _pack(tokenizer, text, max_length):
    segments = text if isinstance(text, (tuple, list)) else (text,)
    if not 1 <= len(segments) <= 2 or not all(
        isinstance(segment, str) for segment in segments
    ):
        raise ValueError(
            "`text` must be a string or a pair of strings (sentence A, "
            f"sentence B); got {text!r}."
        )
    token_ids, segment_ids = [tokenizer.cls_token_id], [0]
    for index, segment in enumerate(segments):
        ids = ops.convert_to_numpy(tokenizer(segment)).tolist()
        token_ids += ids + [tokenizer.sep_token_id]
        segment_ids += [index] * (len(ids) + 1)
    if len(token_ids) > max_length:
        raise ValueError(
            f"The text is {len(token_ids)} tokens long with [CLS]/[SEP] but "
            f"the model takes at most {max_length}; shorten it (an attention "
            "map of more than ~60 tokens is hard to read anyway)."
        )
    return np.array([token_ids], "int32"), np.array([segment_ids], "int32")


def attention_map(model, tokenizer, text, layer):
    """Returns the tokens of `text` and one layer's attention probabilities.

    Args:
        model: `keras_bert.BertBackbone`, or a task model with a
            `.backbone` (e.g. `BertClassifier`, `BertPretrainer`).
        tokenizer: `keras_bert.BertTokenizer` matching the model.
        text: str, or a pair of str packed as `[CLS] A [SEP] B [SEP]`.
        layer: int. Transformer block, 0-based; negative counts from the
            last (-1 is the top block).

    Returns:
        `(tokens, probabilities)`: the list of WordPiece strings (with
        `[CLS]` and `[SEP]`) and a float NumPy array of shape
        `(num_heads, length, length)` where row `i` of a head is how token
        `i` (the query) spreads its attention over all tokens (the keys);
        each row sums to 1.

    Example:

    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat"]
    >>> tokenizer = keras_bert.BertTokenizer(vocab)
    >>> model = keras_bert.BertBackbone(vocabulary_size=7, num_layers=2,
    ...     num_heads=2, hidden_dim=8, intermediate_dim=16)
    >>> tokens, probs = keras_bert.attention_map(model, tokenizer,
    ...                                          "The cat", layer=-1)
    >>> tokens
    ['[CLS]', 'the', 'cat', '[SEP]']
    >>> probs.shape
    (2, 4, 4)
    >>> bool(np.allclose(probs.sum(axis=-1), 1.0, atol=1e-5))
    True
    """
    backbone = _backbone_of(model)
    if not -backbone.num_layers <= layer < backbone.num_layers:
        raise ValueError(
            f"`layer` must be in [{-backbone.num_layers}, "
            f"{backbone.num_layers - 1}] for this {backbone.num_layers}-layer "
            f"model; got {layer}."
        )
    token_ids, segment_ids = _pack(
        tokenizer, text, backbone.max_sequence_length
    )
    outputs = _with_attentions(backbone)(
        {
            "token_ids": token_ids,
            "segment_ids": segment_ids,
            "padding_mask": np.ones_like(token_ids),
        },
        training=False,
    )
    probabilities = ops.convert_to_numpy(
        ops.cast(outputs["attentions"][layer][0], "float32")
    )
    tokens = [tokenizer.id_to_token(int(i)) for i in token_ids[0]]
    return tokens, probabilities


def plot_attention(model, tokenizer, text, layer, head=None, path=None):
    """Draws which tokens attend to which, for one layer and head.

    A heatmap: row `i` is the query token, column `j` the key token, and
    the colour is the attention probability from `i` to `j` (each row sums
    to 1). Needs matplotlib (`pip install matplotlib`).

    Args:
        model: `keras_bert.BertBackbone`, or a task model with a
            `.backbone`.
        tokenizer: `keras_bert.BertTokenizer` matching the model.
        text: str, or a pair of str (`[CLS] A [SEP] B [SEP]`).
        layer: int. Transformer block, 0-based; negative counts from the
            top.
        head: int or None. Attention head, 0-based; None draws the mean
            over the heads of the layer.
        path: str or None. If given, the figure is also written there
            (the format follows the extension, e.g. ".png", ".svg").

    Returns:
        The `matplotlib.figure.Figure` (notebooks display it).

    Example:

    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat"]
    >>> tokenizer = keras_bert.BertTokenizer(vocab)
    >>> model = keras_bert.BertBackbone(vocabulary_size=7, num_layers=2,
    ...     num_heads=2, hidden_dim=8, intermediate_dim=16)
    >>> figure = keras_bert.plot_attention(model, tokenizer, "The cat",
    ...                                    layer=0, head=1)
    >>> figure.axes[0].get_title()
    'layer 0, head 1'
    """
    try:
        from matplotlib.figure import Figure
    except ImportError as error:
        raise ImportError(
            "plot_attention needs matplotlib: `pip install matplotlib`."
        ) from error
    tokens, probabilities = attention_map(model, tokenizer, text, layer)
    num_heads = probabilities.shape[0]
    if head is None:
        matrix, which = probabilities.mean(axis=0), "mean of heads"
    elif -num_heads <= head < num_heads:
        matrix, which = probabilities[head], f"head {head}"
    else:
        raise ValueError(
            f"`head` must be None or in [{-num_heads}, {num_heads - 1}] for "
            f"this {num_heads}-head model; got {head}."
        )
    layer_index = layer % _backbone_of(model).num_layers

    # Cells of ~0.3 inch keep WordPiece labels legible at any length.
    side = max(4.0, 0.3 * len(tokens) + 2.0)
    figure = Figure(figsize=(side + 1.0, side))
    axis = figure.add_subplot()
    image = axis.imshow(matrix, cmap="viridis", vmin=0.0, vmax=matrix.max())
    axis.set_xticks(range(len(tokens)), tokens, rotation=90)
    axis.set_yticks(range(len(tokens)), tokens)
    axis.set_xlabel("attended to (key)")
    axis.set_ylabel("attending (query)")
    axis.set_title(f"layer {layer_index}, {which}")
    figure.colorbar(image, ax=axis, fraction=0.046, pad=0.04,
                    label="attention probability")
    figure.tight_layout()
    if path is not None:
        figure.savefig(path, dpi=150)
    return figure
