"""`--model` in every command: a directory or a pretrained model's name.

`resolve_model` turns a name (a Hugging Face id or `hf://` handle, a
keras-hub preset name, a `kaggle://` handle) into the local directory it
is fetched to, as `from_preset` does, so each command then reads a
directory. `huggingface_task` tells what a Hugging Face checkpoint was
fine-tuned for, from its `config.json`, so `predict` and `evaluate` run a
fine-tuned Hugging Face model as they run what `keras-bert finetune`
writes.
"""

import os

# transformers architecture -> (task of the commands, keras_bert class).
_ARCHITECTURES = {
    "BertForSequenceClassification": ("classify", "BertClassifier"),
    "BertForTokenClassification": ("ner", "BertTokenClassifier"),
    "BertForQuestionAnswering": ("squad", "BertQuestionAnswerer"),
    "BertForMultipleChoice": ("choice", "BertMultipleChoice"),
}


def resolve_model(name, load_weights=True):
    """The local directory of `--model NAME` (fetched when needed)."""
    from keras_bert.checkpoints.preset_names import resolve_preset

    return resolve_preset(name, load_weights=load_weights)


def huggingface_task(model_dir):
    """`(task, class name)` of a fine-tuned Hugging Face checkpoint, or
    None when `model_dir` is not one (a bare encoder, another layout)."""
    from keras_bert.checkpoints import checkpoint_files as files

    if files.detect_layout(model_dir) != files.HUGGINGFACE:
        return None
    config = files.read_json(os.path.join(model_dir, "config.json"))
    for architecture in config.get("architectures") or ():
        if architecture in _ARCHITECTURES:
            task, class_name = _ARCHITECTURES[architecture]
            # transformers writes one label for a regressor.
            if task == "classify" and (
                    config.get("problem_type") == "regression"
                    or len(config.get("id2label") or (0, 1)) == 1):
                return "regress", class_name
            return task, class_name
    return None
