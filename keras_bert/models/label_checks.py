"""Labels given to a task's `fit` and `evaluate`, checked where they enter.

String labels reached the backend as a string tensor (a 71-line XLA
"No registered '_Arg' OpKernel" error on TensorFlow), and a class id out
of range trained silently to a `nan` loss. Both are caught here, before the
first step, on every backend: strings are mapped through the model's
`label_names` when it has them and refused with the way to map them
otherwise; an id outside the classes is an error naming it and where it
is. A regressor's labels must be numbers; a task without classes whose
"labels" are texts by design (an embedder's positive passages) is left
alone. A `tf.data` dataset is not read ahead, so its labels are not
checked.
"""

import numpy as np

from keras_bert.labels import IGNORE_LABEL


def _classes(model):
    """`(count, argument)` of a classification task, or None."""
    if getattr(model, "num_classes", 1) > 1:
        return model.num_classes, "num_classes"
    if getattr(model, "num_choices", None):
        return model.num_choices, "num_choices"
    return None


def _leaves(y, index=""):
    """`(index, value)` of every label in nested lists or arrays."""
    if isinstance(y, (list, tuple, np.ndarray)):
        for position, item in enumerate(y):
            yield from _leaves(item, f"{index}[{position}]")
    else:
        yield index, y


def _nested(y, function):
    if isinstance(y, (list, tuple, np.ndarray)):
        return [_nested(item, function) for item in y]
    return function(y)


def _is_text(value):
    return isinstance(value, (str, bytes, np.str_, np.bytes_))


def _mapped(model, y, texts, names):
    owner = type(model).__name__
    shown = sorted({str(value) for _, value in texts})[:5]
    shown = ", ".join(map(repr, shown)) + (", ..." if len(shown) == 5
                                           else "")
    if _classes(model) is None:
        raise ValueError(f"{owner}: the labels are strings ({shown}); a "
                         "regression takes numbers.")
    if not names:
        hint = (" or give the model `label_names=[...]` (one per class, in "
                "id order) and it maps them" if hasattr(model, "label_names")
                else "")
        raise ValueError(
            f"{owner}: the labels are strings ({shown}); the model takes "
            "class ids. Map them to 0..N-1 first, e.g. `names = "
            "sorted(set(y)); y = [names.index(label) for label in y]`"
            f"{hint}.")
    ids = {name: index for index, name in enumerate(names)}
    for index, value in texts:
        if str(value) not in ids:
            raise ValueError(
                f"{owner}: label {str(value)!r} at y{index} is not one of "
                f"the model's label_names ({', '.join(names)}).")
    return _nested(y, lambda value: ids[str(value)] if _is_text(value)
                   else value)


def checked_labels(model, y):
    """`y` checked for `model` (string labels mapped to ids when the model
    has `label_names`); a `ValueError` naming the first bad label.

    Args:
        model: a task model (its `num_classes` or `num_choices` and
            `label_names` are read).
        y: the labels as given to `fit` or `evaluate`.

    Example:
    >>> class Tagger:
    ...     num_classes, label_names = 2, ["neg", "pos"]
    >>> checked_labels(Tagger(), ["pos", "neg"])
    [1, 0]
    >>> checked_labels(Tagger(), [0, 2])
    Traceback (most recent call last):
    ...
    ValueError: Tagger: label 2 at y[1] is not a class id: the model has num_classes=2, ids 0..1.
    """
    if y is None or isinstance(y, dict) or hasattr(y, "cardinality"):
        return y
    if not isinstance(y, (list, tuple, np.ndarray)):
        y = np.asarray(y)  # a backend tensor
    classes = _classes(model)
    regression = getattr(model, "num_classes", None) == 1
    if classes is None and not regression:
        return y  # e.g. an embedder's positives: texts by design
    texts = [(index, value) for index, value in _leaves(y)
             if _is_text(value)]
    if texts:
        y = _mapped(model, y, texts, getattr(model, "label_names", None))
    if classes is not None:
        _check_ids(model, y, *classes)
    return y


def _bad_id(y, count, ignored):
    """`(index, value)` of the first label that is not a class id, or
    None."""
    try:
        array = np.asarray(y)
    except ValueError:  # ragged: one list of word labels per example
        array = None
    if array is not None and array.dtype.kind in "biuf":
        valid = (array == np.floor(array)) & (array >= 0) & (array < count)
        valid |= np.isin(array, ignored)
        if valid.all():
            return None
        position = np.argwhere(~valid)[0]
        return ("".join(f"[{i}]" for i in position),
                array[tuple(position)].item())
    for index, value in _leaves(y):
        value = value.item() if isinstance(value, np.generic) else value
        try:
            number = float(value)
        except (TypeError, ValueError):
            return index, value
        if number not in ignored and (
                number != int(number) or not 0 <= number < count):
            return index, value
    return None


def _check_ids(model, y, count, argument):
    # Per-position labels (a token classifier's) may mark a position as
    # unlabelled.
    ignored = (IGNORE_LABEL,) if getattr(model, "trims_padding", None) == (
        "inputs_and_labels") else ()
    bad = _bad_id(y, count, ignored)
    if bad is not None:
        index, value = bad
        raise ValueError(
            f"{type(model).__name__}: label {value!r} at y{index} is not a "
            f"class id: the model has {argument}={count}, ids "
            f"0..{count - 1}.")
