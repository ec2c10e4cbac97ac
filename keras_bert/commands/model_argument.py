"""`--model` in every command: a directory or a pretrained model's name.

`resolve_model` turns a name (a Hugging Face id or `hf://` handle, a
keras-hub preset name, a `kaggle://` handle) into the local directory it
is fetched to, as `from_preset` does, so each command then reads a
directory. `huggingface_task` tells what a Hugging Face checkpoint was
fine-tuned for, from its `config.json` and the task records' Hugging Face
classes, so `predict` and `evaluate` run a fine-tuned Hugging Face model
as they run what `keras-bert finetune` writes.
"""

import os

from keras_bert.tasks.registry import record_of_architecture


def resolve_model(name, load_weights=True):
    """The local directory of `--model NAME` (fetched when needed)."""
    from keras_bert.checkpoints.preset_names import resolve_preset

    return resolve_preset(name, load_weights=load_weights)


def huggingface_task(model_dir):
    """`(CommandTask, TaskRecord)` of a fine-tuned Hugging Face
    checkpoint, or None when `model_dir` is not one (a bare encoder,
    another layout)."""
    from keras_bert.checkpoints import checkpoint_files as files

    if files.detect_layout(model_dir) != files.HUGGINGFACE:
        return None
    config = files.read_json(os.path.join(model_dir, "config.json"))
    for architecture in config.get("architectures") or ():
        record = record_of_architecture(architecture)
        if record is None:
            continue
        # transformers writes one label for a regressor.
        regressor = (config.get("problem_type") == "regression"
                     or len(config.get("id2label") or (0, 1)) == 1)
        return record.default_command(regressor), record
    return None
