"""Low-rank adaptation (LoRA, Hu et al., 2021) of a `BertBackbone`.

Keras' `Dense` and `EinsumDense` carry LoRA themselves (`enable_lora`: the
kernel frozen, `lora_kernel_a @ lora_kernel_b * alpha / rank` added to
it, B starting at zero); this module picks the layers of each encoder
block, freezes everything else in the backbone, and names the roles.
"""

from keras_bert._compat.layer_tracking import flatten_layers
from keras_bert.quantization import quantized_layers

# Role -> the layer of an encoder block it names.
LORA_TARGETS = {
    # q, k and v share one fused (hidden, 3, hidden) kernel: Keras' adapter
    # gives each of them its own A (hidden, r) and one shared B (r, hidden),
    # 4 * hidden * r weights a block, as many as rank-r LoRA on query and
    # value (the paper's choice and keras-hub's default).
    "query_key_value": lambda block: block.attention.query_key_value,
    "attention_output": lambda block: block.attention.output_dense,
    "intermediate": lambda block: block.intermediate_dense,
    "output": lambda block: block.output_dense,
}
DEFAULT_LORA_TARGETS = ("query_key_value",)


def lora_layers(backbone):
    """The layers of `backbone` with LoRA enabled, in order."""
    return [layer for layer in flatten_layers(backbone)
            if getattr(layer, "lora_enabled", False)]


def check_target_names(target_names):
    """`target_names` as a tuple, refusing the roles `LORA_TARGETS` lacks."""
    target_names = tuple(target_names)
    unknown = [name for name in target_names if name not in LORA_TARGETS]
    if unknown:
        raise ValueError(
            f"Unknown LoRA target(s) {unknown}; the targets of a BERT "
            f"encoder block are {sorted(LORA_TARGETS)}.")
    return target_names


def lora_targets(backbone, target_names):
    """{"transformer_layer_<i>/<role>": layer} for every block and each of
    the (checked) `target_names`, block by block."""
    return {f"transformer_layer_{i}/{name}": LORA_TARGETS[name](
                backbone.get_layer(f"transformer_layer_{i}"))
            for i in range(backbone.num_layers) for name in target_names}


def enable_lora(backbone, rank, target_names=None, lora_alpha=None):
    """See `BertBackbone.enable_lora`."""
    target_names = check_target_names(target_names or DEFAULT_LORA_TARGETS)
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
        raise ValueError(f"rank must be a positive int, got {rank!r}.")
    enabled = lora_layers(backbone)
    if enabled:
        raise ValueError(
            f"LoRA is already enabled on this backbone (rank "
            f"{enabled[0].lora_rank}, {len(enabled)} layers). Save and "
            "reload it to merge the adapters, then enable LoRA again.")
    quantized = quantized_layers(backbone)
    if quantized:
        raise ValueError(
            "LoRA needs a float backbone; this one is quantized "
            f"({len(quantized)} layers, e.g. {quantized[0].name!r}). Enable "
            "LoRA on the float model, train, then quantize the merged "
            "model.")
    targets = lora_targets(backbone, target_names).values()
    # A frozen layer freezes its variables; the targets are switched back on
    # and Keras then freezes their kernels, leaving the adapters trainable.
    for layer in flatten_layers(backbone, include_self=False):
        layer.trainable = False
    for layer in targets:
        layer.trainable = True
        layer.enable_lora(rank, lora_alpha=lora_alpha)
        # Adapters only, as in the paper: the biases stay as loaded.
        if layer.bias is not None:
            layer.bias.trainable = False
