"""How BERT's weights are laid out on a `(data, model)` device mesh.

`BERT_SHARDING` is the single source of truth: `bert_layout_map` builds the
`keras.distribution.LayoutMap` from it and docs/distributed.md shows it as
a table. Each row is `(variable path pattern, axes, reason)`; an axis is the
mesh axis name that dimension is split over, or None (not split). Weights
that match no row (LayerNorms, row-parallel biases, the pooler, the heads)
are replicated on every device.
"""

import keras

MODEL_AXIS = "model"
DATA_AXIS = "batch"

# Megatron-style tensor parallelism: the first matmul of each pair is split
# by output columns and the second by input rows, so the activation between
# them stays split and one all-reduce per pair completes the sum.
BERT_SHARDING = (
    (
        r".*attention/query_key_value/kernel",
        (None, MODEL_AXIS),
        "column-parallel: each device computes a slice of the fused "
        "[q | k | v] projection",
    ),
    (
        r".*attention/query_key_value/bias",
        (MODEL_AXIS,),
        "follows its kernel's output columns",
    ),
    (
        r".*attention/output_dense/kernel",
        (MODEL_AXIS, None),
        "row-parallel: consumes the split attention output, partial sums "
        "are all-reduced",
    ),
    (
        r".*intermediate_dense/kernel",
        (None, MODEL_AXIS),
        "column-parallel: the feed-forward inner width is split",
    ),
    (
        r".*intermediate_dense/bias",
        (MODEL_AXIS,),
        "follows its kernel's output columns",
    ),
    (
        r".*transformer_layer_\d+/output_dense/kernel",
        (MODEL_AXIS, None),
        "row-parallel: consumes the split inner activation",
    ),
    (
        r".*embeddings/token_embedding/embeddings",
        (None, MODEL_AXIS),
        "split along hidden, not vocabulary: hidden sizes are multiples of "
        "64, vocabularies (30522, 28996) are not multiples of 8; the tied "
        "MLM decoder contracts over the same split axis",
    ),
    (
        r".*embeddings/position_embeddings",
        (None, MODEL_AXIS),
        "split along hidden, like the token embedding it is added to",
    ),
)


def bert_layout_map(device_mesh, model_axis=MODEL_AXIS):
    """Builds the `LayoutMap` that shards BERT over a device mesh.

    Attention and feed-forward kernels are split along `model_axis`
    (column-parallel for `query_key_value` and `intermediate_dense`,
    row-parallel for both `output_dense` layers), the token and position
    embeddings along their hidden axis, everything else is replicated. The
    patterns match `BertBackbone` variable paths with any prefix, so the
    same map serves `BertPretrainer` and every task model. `hidden_dim`,
    `3 * hidden_dim` and `intermediate_dim` must divide evenly by the size
    of `model_axis` (JAX raises `IndivisibleError` otherwise).

    Args:
        device_mesh: `keras.distribution.DeviceMesh` with an axis named
            `model_axis`.
        model_axis: str. The mesh axis that weights are split over.

    Returns:
        A `keras.distribution.LayoutMap` for `keras.distribution.ModelParallel`.

    Example:
    >>> import keras
    >>> mesh = keras.distribution.DeviceMesh(
    ...     (2, 4), ("batch", "model"), [f"cpu:{i}" for i in range(8)])
    >>> layout_map = bert_layout_map(mesh)
    >>> layout_map["transformer_layer_0/intermediate_dense/kernel"].axes
    (None, 'model')
    >>> layout_map["transformer_layer_0/output_layer_norm/gamma"] is None
    True
    """
    if model_axis not in device_mesh.axis_names:
        raise ValueError(
            f"The device mesh has axes {tuple(device_mesh.axis_names)} but "
            f"the BERT layout splits weights over {model_axis!r}. Build the "
            f"mesh with axis_names=({DATA_AXIS!r}, {model_axis!r}) or pass "
            "model_axis= one of its axes."
        )
    layout_map = keras.distribution.LayoutMap(device_mesh)
    for pattern, axes, _ in BERT_SHARDING:
        layout_map[pattern] = tuple(
            model_axis if axis == MODEL_AXIS else axis for axis in axes
        )
    return layout_map
