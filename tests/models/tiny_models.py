"""A tiny backbone config, packed inputs and trained-looking LoRA adapters
shared by the model tests."""

import numpy as np

TINY = dict(vocabulary_size=60, num_layers=2, num_heads=2, hidden_dim=32,
            intermediate_dim=64, max_sequence_length=16, dropout=0.0)


def packed_inputs(batch=3, length=9, seed=0):
    """Seeded token ids over TINY's vocabulary, one segment, and the last
    row padded after position 6."""
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, length), "int32")
    mask[-1, 6:] = 0
    return {
        "token_ids": (rng.integers(5, 60, (batch, length)) * mask).astype(
            "int32"),
        "segment_ids": np.zeros((batch, length), "int32"),
        "padding_mask": mask,
    }


def move_lora_adapters(model, seed=1):
    """Non-zero LoRA B matrices, as training leaves them (B starts at 0)."""
    rng = np.random.default_rng(seed)
    for weight in model.trainable_weights:
        if weight.path.endswith("lora_kernel_b"):
            weight.assign(rng.normal(0, 0.5, weight.shape).astype("float32"))
