"""The registry of tasks: where keras_bert looks up a model's record, a
`--task` or a Hugging Face class.

It starts with keras_bert's own records (`builtin_tasks`);
`register_task` adds one. Every lookup reads the records as they are at
the call, so a task registered after `import keras_bert` is found by the
commands, the exports and the checkpoint converters alike.
"""

import importlib

from keras_bert.tasks.builtin_tasks import BUILTIN_TASKS

# Record name -> record, in registration order.
_RECORDS = {}


def _clashes(record):
    """What of `record` another registered record already owns."""
    commands = {command.name for command in record.commands}
    for other in _RECORDS.values():
        if other.name == record.name:
            yield f"the name {record.name!r} (the {other.class_name} record)"
        if other.model_class == record.model_class:
            yield f"the class {record.model_class} (record {other.name!r})"
        shared = sorted(commands & {command.name for command in other.commands})
        if shared:
            yield f"--task {', '.join(shared)} (record {other.name!r})"


def register_task(record):
    """Adds a task to the registry; registering the same record again
    changes nothing.

    Args:
        record: `keras_bert.tasks.TaskRecord`.

    Returns:
        The record.

    Raises:
        ValueError: another record has its name, its model class or one of
            its `--task` names.

    Example:
    >>> from keras_bert.tasks import CommandTask, TaskRecord
    >>> record = register_task(TaskRecord(
    ...     name="topic", model_class="my_package.topic.TopicClassifier",
    ...     commands=(CommandTask("topic", inputs="text", labels="classes",
    ...                           monitor="accuracy"),)))
    >>> "topic" in command_names()
    True
    >>> unregister_task("topic").class_name
    'TopicClassifier'
    """
    if _RECORDS.get(record.name) == record:
        return record
    clashes = list(_clashes(record))
    if clashes:
        raise ValueError(
            f"Cannot register the task {record.name!r}: "
            f"{'; '.join(clashes)} is taken. Choose other names, or "
            "unregister_task the other record first.")
    _RECORDS[record.name] = record
    return record


def unregister_task(name):
    """Removes the record named `name` from the registry and returns it."""
    record_named(name)
    return _RECORDS.pop(name)


def task_records():
    """Every registered record, keras_bert's own first."""
    return tuple(_RECORDS.values())


def record_named(name):
    """The record named `name` (e.g. "classifier")."""
    if name not in _RECORDS:
        raise KeyError(f"No task named {name!r} is registered; the tasks: "
                       f"{', '.join(_RECORDS)}.")
    return _RECORDS[name]


def record_of_class(cls):
    """The record of `cls`, or of its nearest base class that has one;
    None when no class of its bases is registered."""
    by_class = {record.model_class: record for record in _RECORDS.values()}
    for base in cls.__mro__:
        record = by_class.get(f"{base.__module__}.{base.__qualname__}")
        if record is not None:
            return record
    return None


def record_of_model(model):
    """The record of `model`'s class (see `record_of_class`)."""
    return record_of_class(type(model))


def command_names():
    """The `--task` values of every registered record."""
    return tuple(command.name for record in _RECORDS.values()
                 for command in record.commands)


def find_command(name):
    """`(record, CommandTask)` of the `--task` value `name`."""
    for record in _RECORDS.values():
        for command in record.commands:
            if command.name == name:
                return record, command
    raise KeyError(f"No task has --task {name!r}; the choices: "
                   f"{', '.join(command_names())}.")


def record_of_architecture(name):
    """The record whose commands run a fine-tuned checkpoint of the
    transformers class `name` (e.g. "BertForTokenClassification"), or
    None."""
    for record in _RECORDS.values():
        if record.commands and any(hf_class.name == name for hf_class in
                                   record.huggingface_classes):
            return record
    return None


def class_modules(records):
    """{class name: module} of the model and preprocessor classes of
    `records`."""
    paths = [path for record in records
             for path in (record.model_class, record.preprocessor_class)
             if path]
    return {path.rsplit(".", 1)[1]: path.rsplit(".", 1)[0]
            for path in paths}


def load_class(path):
    """The class a record names by dotted path (its module imported)."""
    module, name = path.rsplit(".", 1)
    return getattr(importlib.import_module(module), name)


for _record in BUILTIN_TASKS:
    register_task(_record)
