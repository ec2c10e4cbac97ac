"""Checkpoint loading, conversion, presets and export.

Reads four directory layouts (Hugging Face, original Google TF, keras_bert
presets, keras-hub BERT presets), fetches pretrained models by name into
the Hugging Face or kagglehub cache (`resolve_preset`), writes keras_bert
presets and Hugging Face directories. See docs/checkpoints.md.
"""

from keras_bert.lazy_exports import lazy_exports

# Exported name -> the module that defines it, imported on first use.
_EXPORTS = {
    "CheckpointError": "checkpoint_error",
    "detect_layout": "checkpoint_files",
    "load_backbone": "loading",
    "load_checkpoint_weights": "loading",
    "load_preset_model": "loading",
    "load_task": "loading",
    "resolve_preset": "preset_names",
    "export_to_huggingface": "saving",
    "save_to_preset": "saving",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
