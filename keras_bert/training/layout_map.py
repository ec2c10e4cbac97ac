"""How BERT's weights and activations are laid out on a `(data, model)` mesh.

`BERT_SHARDING` (weights) and `BERT_ACTIVATION_SHARDING` (layer outputs)
are the single source of truth: `bert_layout_map` builds the
`keras.distribution.LayoutMap` from them and docs/distributed.md shows them
as tables. Each row is `(path pattern, axes, reason)`; an axis is the mesh
axis name that dimension is split over, or None (not split). Weights that
match no row (LayerNorms, row-parallel biases, the pooler, the heads) are
replicated on every device; activations that match no row are placed by
XLA's sharding propagation.
"""

import keras

MODEL_AXIS = "model"
DATA_AXIS = "batch"

# Megatron-style tensor parallelism (Shoeybi et al., 2019): the first matmul
# of each pair is split by output columns and the second by input rows, so
# the activation between them stays split and one all-reduce per pair
# completes the sum.
BERT_SHARDING = (
    (
        r".*attention/query_key_value/kernel",
        (None, None, MODEL_AXIS),
        "column-parallel by heads: the kernel is (hidden, 3, hidden) and "
        "its last axis is heads x head_dim, so each device computes whole "
        "heads of q, k and v and attends over them on its own",
    ),
    (
        r".*attention/query_key_value/bias",
        (None, MODEL_AXIS),
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

# Where the residual stream is whole again on every model device. Without
# these constraints XLA keeps it split along hidden after the embeddings
# (whose tables are), which costs LayerNorm all-reduces and all-gathers in
# front of the column-parallel matmuls: 12 all-reduces and 26 all-gathers
# per block and training step instead of 4 and 0 (docs/distributed.md).
BERT_ACTIVATION_SHARDING = (
    (
        r"(.*/)?embeddings/output",
        (DATA_AXIS, None, None),
        "the embedding sum, gathered once along hidden before the first "
        "block",
    ),
    (
        r".*transformer_layer_\d+/attention/output_dense/output",
        (DATA_AXIS, None, None),
        "after the row-parallel attention output: its partial sums are "
        "all-reduced here",
    ),
    (
        r".*transformer_layer_\d+/output_dense/output",
        (DATA_AXIS, None, None),
        "after the row-parallel feed-forward output: its partial sums are "
        "all-reduced here",
    ),
)


def bert_layout_map(device_mesh, model_axis=MODEL_AXIS, data_axis=None):
    """Builds the `LayoutMap` that shards BERT over a device mesh.

    Attention and feed-forward kernels are split along `model_axis`
    (column-parallel for `query_key_value`, by whole heads, and
    `intermediate_dense`; row-parallel for both `output_dense` layers), the
    token and position embeddings along their hidden axis, everything else
    is replicated. The outputs of the embeddings and of both row-parallel
    layers are whole along hidden (split along `data_axis` by batch), so a
    transformer block costs the two all-reduces of Megatron-LM forward and
    two backward. The patterns match `BertBackbone` paths with any prefix,
    so the same map serves `BertPretrainer` and every task model.
    `hidden_dim` and `intermediate_dim` must divide evenly by the size of
    `model_axis` (JAX raises `IndivisibleError` otherwise), and `num_heads`
    should, for each device to hold whole heads.

    Args:
        device_mesh: `keras.distribution.DeviceMesh` with an axis named
            `model_axis`.
        model_axis: str. The mesh axis that weights are split over.
        data_axis: str or None. The mesh axis the batch is split over
            (`ModelParallel`'s `batch_dim_name`); None means the mesh's
            other axis, if it has one.

    Returns:
        A `keras.distribution.LayoutMap` for `keras.distribution.ModelParallel`.

    Example:
    >>> import keras
    >>> mesh = keras.distribution.DeviceMesh(
    ...     (2, 4), ("batch", "model"), [f"cpu:{i}" for i in range(8)])
    >>> layout_map = bert_layout_map(mesh)
    >>> layout_map["transformer_layer_0/attention/query_key_value/kernel"].axes
    (None, None, 'model')
    >>> layout_map["transformer_layer_0/output_dense/output"].axes
    ('batch', None, None)
    >>> layout_map["transformer_layer_0/output_layer_norm/gamma"] is None
    True
    """
    axis_names = tuple(device_mesh.axis_names)
    if model_axis not in axis_names:
        raise ValueError(
            f"The device mesh has axes {axis_names} but the BERT layout "
            f"splits weights over {model_axis!r}. Build the mesh with "
            f"axis_names=({DATA_AXIS!r}, {model_axis!r}) or pass "
            "model_axis= one of its axes."
        )
    others = [name for name in axis_names if name != model_axis]
    if data_axis is None and len(others) > 1:
        raise ValueError(
            f"The device mesh has axes {axis_names}: pass data_axis= the "
            f"one of {tuple(others)} that the batch is split over."
        )
    if data_axis is None:
        data_axis = others[0] if others else None
    elif data_axis not in others:
        raise ValueError(
            f"data_axis={data_axis!r} is not a mesh axis other than "
            f"{model_axis!r}; the mesh has {axis_names}."
        )
    names = {MODEL_AXIS: model_axis, DATA_AXIS: data_axis}
    layout_map = keras.distribution.LayoutMap(device_mesh)
    for pattern, axes, _ in BERT_SHARDING + BERT_ACTIVATION_SHARDING:
        layout_map[pattern] = tuple(names.get(axis, axis) for axis in axes)
    return layout_map
