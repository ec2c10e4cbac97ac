"""Which export recipe a model gets: its task record's (no TF needed)."""

from keras_bert.tasks.registry import record_of_model
from keras_bert.tasks.registry import task_records


def export_record(model):
    """The task record of `model`, whose `name` is its export kind and
    whose text inputs, packed layout and serving outputs make its
    signatures; a `TypeError` naming the exportable classes else."""
    record = record_of_model(model)
    if record is not None and record.serving_outputs is not None:
        return record
    names = ", ".join(other.class_name for other in task_records()
                      if other.serving_outputs is not None)
    raise TypeError(
        f"Cannot export a {type(model).__name__}: export supports {names}. "
        "Export the model's `backbone` for embeddings."
    )
