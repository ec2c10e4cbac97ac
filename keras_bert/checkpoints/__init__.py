"""Checkpoint loading, conversion, presets and export.

Reads four directory layouts (Hugging Face, original Google TF, keras_bert
presets, keras-hub BERT presets), fetches pretrained models by name into
the Hugging Face or kagglehub cache (`resolve_preset`), writes keras_bert
presets and Hugging Face directories. See docs/checkpoints.md.
"""

from keras_bert.checkpoints.checkpoint_error import CheckpointError
from keras_bert.checkpoints.checkpoint_files import detect_layout
from keras_bert.checkpoints.loading import load_backbone
from keras_bert.checkpoints.loading import load_checkpoint_weights
from keras_bert.checkpoints.loading import load_preset_model
from keras_bert.checkpoints.loading import load_task
from keras_bert.checkpoints.preset_names import resolve_preset
from keras_bert.checkpoints.saving import export_to_huggingface
from keras_bert.checkpoints.saving import save_to_preset
