"""One `--task` of `keras-bert finetune`, `evaluate` and `predict`."""

import dataclasses

# What an example's input is, and so how the commands read it: a table
# (TSV/CSV/JSONL) column or two, CoNLL words, or SQuAD questions.
INPUTS = {
    "text": "one text column",
    "pair": "two text columns",
    "text_or_pair": "one text column, or two when a second is named",
    "words": "a sentence's words (a CoNLL file, a word and its tag a line)",
    "question_context": "a question and its context (a SQuAD JSON file)",
    "prompt_choices": "a prompt column and one column per choice",
}
# What an example's label is, and so how the commands encode, score and
# print it.
LABELS = {
    "classes": "a class name (accuracy, and F1 for two classes)",
    "number": "a number (Pearson, Spearman, MSE)",
    "tags": "an IOB tag per word (entity precision, recall, F1)",
    "span": "the answer's text and start in the context (exact match, F1)",
    "choice": "the 0-based index of the right choice (accuracy)",
}


def check_choice(owner, field, value, choices):
    """Raises a `ValueError` naming `owner`'s `field` unless `value` is one
    of `choices`."""
    if value not in choices:
        raise ValueError(
            f"{owner}: {field}={value!r} is not one of "
            f"{', '.join(map(repr, choices))}.")


@dataclasses.dataclass(frozen=True)
class CommandTask:
    """A `--task` of the fine-tuning commands: what its files hold and
    which score picks the best epoch.

    The commands read, encode, score and print an example by its `inputs`
    and `labels` kinds, so a new task whose files look like an existing
    one's (a text and a class name, say) needs no code in the commands.

    Args:
        name: str. The `--task` value, e.g. "classify".
        inputs: str. What an example's input is: a key of `INPUTS`
            ("text", "pair", "text_or_pair", "words", "question_context",
            "prompt_choices").
        labels: str. What its label is: a key of `LABELS` ("classes",
            "number", "tags", "span", "choice").
        monitor: str. The validation score, higher is better, that picks
            the best epoch: one the `labels` kind reports (e.g.
            "accuracy", "pearson", "f1").
        sequence_length: int. Tokens per example unless
            `--sequence-length` says otherwise.

    Example:
    >>> task = CommandTask("classify", inputs="text", labels="classes",
    ...                    monitor="accuracy")
    >>> task.sequence_length
    128
    """

    name: str
    inputs: str
    labels: str
    monitor: str
    sequence_length: int = 128

    def __post_init__(self):
        owner = f"CommandTask {self.name!r}"
        check_choice(owner, "inputs", self.inputs, INPUTS)
        check_choice(owner, "labels", self.labels, LABELS)
