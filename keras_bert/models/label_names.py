"""Class names on classification tasks: checked once, used everywhere.

A classifier or tagger may carry `label_names`, one name per class in id
order (from a Hugging Face checkpoint's `id2label`, or given by the user).
`predict_labels` answers with them, `export_saved_model` and
`export_onnx` put them in the served `labels`/`tags` outputs, and
`export_to_huggingface` writes them back as `id2label`.
"""

import numpy as np


def checked_label_names(label_names, num_classes, owner):
    """`label_names` as a list of str, or None; a `ValueError` naming
    `owner` when their count is not `num_classes` or a name repeats."""
    if label_names is None:
        return None
    if isinstance(label_names, str):
        raise ValueError(f"{owner}: label_names must be a list of names, "
                         f"one per class; got the string {label_names!r}.")
    names = [str(name) for name in label_names]
    if len(names) != num_classes:
        raise ValueError(
            f"{owner}: label_names has {len(names)} names ({names}) for "
            f"num_classes={num_classes}.")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"{owner}: label_names repeats {repeated}.")
    return names


def named(label_ids, label_names):
    """Label ids (an int, an int array or nested lists of ints, ragged
    included) with each id replaced by its name when there are names."""
    if isinstance(label_ids, np.ndarray):
        label_ids = label_ids.tolist()
    if isinstance(label_ids, (list, tuple)):
        return [named(item, label_names) for item in label_ids]
    label_id = int(label_ids)
    return label_id if label_names is None else label_names[label_id]


def served_label_names(model, label_names=None):
    """The names an export serves: `label_names` when given, else the
    model's own, else None."""
    names = label_names or getattr(model, "label_names", None)
    return list(names) if names else None
