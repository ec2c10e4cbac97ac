"""A transformers class that a task is written as and read from."""

import dataclasses


@dataclasses.dataclass(frozen=True)
class HuggingFaceClass:
    """A transformers BERT class: its name and the task heads it holds.

    `export_to_huggingface` writes a model as the first class of its
    task record whose `heads` the model all has, and the commands run a
    Hugging Face checkpoint whose `config.json` lists the class as the
    task of that record.

    Args:
        name: str. The class, as `config.json`'s "architectures" lists
            it, e.g. "BertForSequenceClassification".
        heads: tuple of str. The task's head layers the class holds
            (names of `TaskRecord.heads`); empty for the bare encoder.
        pooler: bool. Whether the class keeps BERT's pooler
            (transformers builds its token-level heads without one).
        id2label: bool. Whether `config.json` names the outputs of the
            first head (`id2label`: the model's `label_names`, else
            "LABEL_0", ...), and so whether a checkpoint's `id2label`
            and that head's size give the task's labels on load.

    Example:
    >>> HuggingFaceClass("BertForTokenClassification",
    ...                  heads=("token_classifier_head",), pooler=False,
    ...                  id2label=True).heads
    ('token_classifier_head',)
    """

    name: str
    heads: tuple = ()
    pooler: bool = True
    id2label: bool = False

    def __post_init__(self):
        # Read back from JSON (an export's request), a tuple is a list.
        object.__setattr__(self, "heads", tuple(self.heads))
