"""One description per task: the registry of `TaskRecord`s.

A record names a task's model and preprocessor classes (by dotted path),
its `--task` values and their label and score kinds, its export kind and
signature, and its Hugging Face classes and head weights. Serialization,
`from_preset`, the checkpoint converters, the exports and the commands
read it instead of tables of their own, so adding a task is one model
file, one preprocessor file and one `register_task` (docs/architecture.md
shows the steps). Importing this package imports no framework.
"""

from keras_bert.tasks.command_task import CommandTask
from keras_bert.tasks.huggingface_class import HuggingFaceClass
from keras_bert.tasks.registry import command_names
from keras_bert.tasks.registry import find_command
from keras_bert.tasks.registry import record_named
from keras_bert.tasks.registry import record_of_architecture
from keras_bert.tasks.registry import record_of_class
from keras_bert.tasks.registry import record_of_model
from keras_bert.tasks.registry import register_task
from keras_bert.tasks.registry import task_records
from keras_bert.tasks.registry import unregister_task
from keras_bert.tasks.task_record import TaskRecord

__all__ = [
    "CommandTask", "HuggingFaceClass", "TaskRecord", "command_names",
    "find_command", "record_named", "record_of_architecture",
    "record_of_class", "record_of_model", "register_task", "task_records",
    "unregister_task",
]
