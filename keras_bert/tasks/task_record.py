"""Everything keras_bert needs to know about a task, in one record."""

import dataclasses

from keras_bert.tasks.command_task import CommandTask
from keras_bert.tasks.command_task import check_choice
from keras_bert.tasks.huggingface_class import HuggingFaceClass

# What an export returns for the model's raw output (docs/export.md
# lists every output).
SERVING_OUTPUTS = {
    "encoder": "sequence_output, pooled_output",
    "classes": "logits, probabilities, label_ids, labels (a one-unit "
               "head: logits, scores)",
    "tags": "per-token logits, probabilities, tag_ids, tags",
    "spans": "start and end logits, the best span's indices and score",
    "embeddings": "one float32 vector per text",
    "scores": "one float32 score per example",
}
# How the packed inputs are shaped: (batch, sequence), or (batch,
# num_choices, sequence) with the model's `num_choices`.
PACKED_LAYOUTS = ("sequence", "choices")


@dataclasses.dataclass(frozen=True)
class TaskRecord:
    """A task's one description: its classes, its command-line tasks, how
    it is exported and how its heads are named in Hugging Face files.

    Serialization, `from_preset`, the checkpoint converters, the exports
    and the commands all read a model's record (`keras_bert.tasks`), so a
    new task is a model file, a preprocessor file and one
    `register_task(TaskRecord(...))`. Classes are named by dotted path, so
    the record imports nothing: the commands read it before a framework
    loads. The backbone has a record too (the task of encoding text),
    since it is saved, exported and converted the same way.

    Args:
        name: str. The record's name, also the model's export kind (the
            word errors and `text_inputs` messages use), e.g.
            "classifier".
        model_class: str. Dotted path of the model class, e.g.
            "keras_bert.models.bert_classifier.BertClassifier"; its
            subclasses share the record unless they have their own.
        preprocessor_class: str or None. Dotted path of the preprocessor
            `from_preset` attaches when a directory has a vocabulary, and
            the commands build; it takes `(tokenizer, sequence_length)`.
        commands: tuple of `CommandTask`. The `--task` values of
            `keras-bert finetune`, `evaluate` and `predict` the model
            serves (see `default_command` for a model saved without
            one).
        heads: dict. Head layer name -> the Hugging Face module its
            weights are stored under (e.g. {"classifier_head":
            "classifier"}: `classifier.weight`, `classifier.bias`). A
            Dense head is stored as `nn.Linear`; a `MaskedLMHead` as
            transformers' `cls.predictions`.
        huggingface_classes: tuple of `HuggingFaceClass`. What
            `export_to_huggingface` writes (the first whose heads the
            model has) and what the commands read as this task; empty
            when transformers has no equivalent.
        text_inputs: tuple of str. Default names of the SavedModel's
            string inputs.
        text_input_counts: tuple of int. How many string inputs the
            SavedModel may take.
        packed_layout: str. "sequence" or "choices" (`PACKED_LAYOUTS`).
        serving_outputs: str or None. What an export returns (a key of
            `SERVING_OUTPUTS`); None when the model is not exported
            itself (the pretrainer: its backbone is).

    Example:
    >>> record = TaskRecord(
    ...     name="sentiment",
    ...     model_class="my_package.sentiment.SentimentClassifier",
    ...     preprocessor_class=(
    ...         "keras_bert.preprocessing.bert_preprocessor.BertPreprocessor"),
    ...     commands=(CommandTask("sentiment", inputs="text",
    ...                           labels="classes", monitor="accuracy"),),
    ...     heads={"sentiment_head": "sentiment"},
    ...     serving_outputs="classes")
    >>> record.class_name
    'SentimentClassifier'
    """

    name: str
    model_class: str
    preprocessor_class: str = None
    commands: tuple = ()
    heads: dict = dataclasses.field(default_factory=dict)
    huggingface_classes: tuple = ()
    text_inputs: tuple = ("text",)
    text_input_counts: tuple = (1,)
    packed_layout: str = "sequence"
    serving_outputs: str = None

    def __post_init__(self):
        # Read back from JSON (an export's request), a tuple is a list.
        for field in ("commands", "huggingface_classes", "text_inputs",
                      "text_input_counts"):
            object.__setattr__(self, field, tuple(getattr(self, field)))
        owner = f"TaskRecord {self.name!r}"
        check_choice(owner, "packed_layout", self.packed_layout,
                     PACKED_LAYOUTS)
        check_choice(owner, "serving_outputs", self.serving_outputs,
                     (None, *SERVING_OUTPUTS))
        for hf_class in self.huggingface_classes:
            unknown = sorted(set(hf_class.heads) - set(self.heads))
            if unknown:
                raise ValueError(
                    f"{owner}: the Hugging Face class {hf_class.name} holds "
                    f"heads {unknown} that `heads` does not name; heads: "
                    f"{sorted(self.heads)}.")

    @property
    def class_name(self):
        """The model class's name, e.g. "BertClassifier"."""
        return self.model_class.rsplit(".", 1)[-1]

    def default_command(self, regressor=False):
        """The `CommandTask` a saved model of this task runs as: the first
        of `commands`, or for a regressor (one output) the one whose
        labels are numbers; None without commands."""
        numbers = [command for command in self.commands
                   if command.labels == "number"]
        if regressor and numbers:
            return numbers[0]
        return self.commands[0] if self.commands else None

    @classmethod
    def from_dict(cls, config):
        """The record `dataclasses.asdict(record)` was made from (after a
        JSON round trip too)."""
        return cls(**{
            **config,
            "commands": [CommandTask(**command)
                         for command in config["commands"]],
            "huggingface_classes": [
                HuggingFaceClass(**hf_class)
                for hf_class in config["huggingface_classes"]],
        })
