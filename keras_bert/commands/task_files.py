"""Reading, checking and scoring the labelled files of every fine-tuning task.

`keras-bert finetune` and `keras-bert evaluate` share these helpers, so a
file is read, checked and scored the same way in both. A `--task` is a
`CommandTask` of a task record (`keras_bert.tasks`): its `inputs` kind
says how a file is read (a table, CoNLL words, SQuAD questions) and its
`labels` kind how the labels are named, encoded and scored.
"""

from keras_bert.tasks.registry import find_command

# Column key -> the option that sets it; defaults when neither the option
# nor the model's finetune.json gives one.
COLUMN_OPTIONS = {"text": "text_column", "text_pair": "text_pair_column",
                  "label": "label_column", "choices": "choice_columns",
                  "token": "token_column", "tag": "tag_column"}
DEFAULT_COLUMNS = {"text": "text", "text_pair": None, "label": "label",
                   "choices": None, "token": 0, "tag": -1}


class UsageError(ValueError):
    """Options that do not fit together (printed as one line, exit 2)."""


def _names(text):
    return [part.strip() for part in text.split(",") if part.strip()]


def add_data_arguments(parser):
    """The column, label and size options of finetune and evaluate."""
    group = parser.add_argument_group(
        "data", "TSV/CSV/JSONL columns by header name; CoNLL columns by "
        "0-based index.")
    group.add_argument("--text-column", help="the text (classify, regress), "
                       "first text (pair) or prompt (choice); default 'text'")
    group.add_argument("--text-pair-column", help="the second text (pair, "
                       "optional for regress); default 'text_pair'")
    group.add_argument("--label-column", help="default 'label'; for choice "
                       "the 0-based index of the right choice")
    group.add_argument("--choice-columns", type=_names, metavar="A,B,...",
                       help="choice: the columns of the choices")
    group.add_argument("--token-column", type=int, help="ner: the word's "
                       "column (default 0)")
    group.add_argument("--tag-column", type=int, help="ner: the tag's "
                       "column (default -1, the last)")
    group.add_argument("--labels", type=_names, metavar="A,B,...",
                       help="label names in id order; the files may then "
                       "use the names or the ids 0..N-1 (default: the "
                       "training file's labels, sorted; for ner 'O' first)")
    group.add_argument("--max-examples", type=int, metavar="N",
                       help="use only the first N examples of each file")
    group.add_argument("--skip-bad-rows", action="store_true",
                       help="leave out table rows that lack a column (their "
                       "lines are logged); by default they stop the run")


def inputs_of(task):
    """The `inputs` kind of the `--task` `task` (e.g. "pair")."""
    return find_command(task)[1].inputs


def labels_of(task):
    """The `labels` kind of the `--task` `task` (e.g. "classes")."""
    return find_command(task)[1].labels


def resolve_columns(task, args, saved=None):
    """Columns from the options, else `saved` (finetune.json), else defaults."""
    columns = {**DEFAULT_COLUMNS, **(saved or {})}
    for key, option in COLUMN_OPTIONS.items():
        if getattr(args, option, None) is not None:
            columns[key] = getattr(args, option)
    inputs = inputs_of(task)
    if inputs == "pair" and columns["text_pair"] is None:
        columns["text_pair"] = "text_pair"
    if inputs == "prompt_choices" and len(columns["choices"] or ()) < 2:
        raise UsageError(
            f"--task {task} needs --choice-columns with two or more "
            "columns, e.g. --choice-columns ending0,ending1,ending2,ending3.")
    return columns


def text_columns(task, columns):
    """The table columns that hold the model's input texts."""
    inputs = inputs_of(task)
    if inputs == "prompt_choices":
        return [columns["text"], *columns["choices"]]
    if inputs == "pair" or (inputs == "text_or_pair"
                            and columns["text_pair"]):
        return [columns["text"], columns["text_pair"]]
    return [columns["text"]]


def _first(items, count):
    return items if count is None else items[:count]


def read_task_data(task, path, columns, max_examples=None,
                   skip_bad_rows=False):
    """Reads a labelled file of `task` with `keras_bert`'s readers
    (`skip_bad_rows`: see `read_table`).

    Returns a dict with "path", "count" and, for SQuAD questions,
    "questions" (those with an answer); otherwise "x" (the model's raw
    input: strings, a tuple of string lists, or word lists) and "labels"
    (as in the file).
    """
    from keras_bert.preprocessing.tasks import DataFileError
    from keras_bert.preprocessing.tasks import readers

    inputs = inputs_of(task)
    if inputs == "question_context":
        questions = [q for q in readers.read_squad(path) if q["answers"]]
        if not questions:
            raise DataFileError(f"{path}: no question has an answer to learn "
                                "or score.")
        questions = _first(questions, max_examples)
        return {"path": path, "questions": questions,
                "count": len(questions)}
    if inputs == "words":
        data = readers.read_conll(path, columns["token"], columns["tag"])
        words = _first(data["words"], max_examples)
        return {"path": path, "x": words, "count": len(words),
                "labels": _first(data["tags"], max_examples)}
    table = readers.read_table(path, text_columns(task, columns),
                               columns["label"], skip_bad_rows=skip_bad_rows)
    texts = [_first(column, max_examples) for column in table["texts"]]
    if inputs == "prompt_choices":
        x = (texts[0], [list(row) for row in zip(*texts[1:])])
    else:
        x = tuple(texts) if len(texts) == 2 else texts[0]
    labels = _first(table["labels"], max_examples)
    return {"path": path, "x": x, "labels": labels, "count": len(labels)}


def _is_int(text):
    return text.lstrip("-").isdigit()


def _line_of(task, path, columns, value):
    """The line of the first example labelled `value`, for error messages."""
    if inputs_of(task) == "words":
        with open(path, encoding="utf-8-sig") as handle:
            for number, line in enumerate(handle, 1):
                fields = line.split()
                try:
                    if fields[0] != "-DOCSTART-" and (
                            fields[columns["tag"]] == value):
                        return number
                except IndexError:
                    continue
        return None
    # The reader's own row parser, so that line numbers agree with its.
    from keras_bert.preprocessing.tasks import table_rows

    for number, row in table_rows(path, None, True):
        try:
            if row is not None and str(row[columns["label"]]).strip() == value:
                return number
        except (KeyError, IndexError, TypeError):
            continue
    return None


def _bad_label(task, path, columns, value, problem):
    from keras_bert.preprocessing.tasks import DataFileError

    line = _line_of(task, path, columns, value)
    where = f"{path}:{line}" if line else path
    kind = "tag" if labels_of(task) == "tags" else "label"
    return DataFileError(f"{where}: {kind} {value!r} {problem}")


def label_names(task, data, columns, given=None):
    """Label names in id order: `given`, else the training file's, sorted.

    Numeric labels sort by value; tags put "O" first (id 0 is what words
    cut off by the sequence length are tagged). None for labels that are
    numbers, choice indices or spans.
    """
    from keras_bert.metrics import get_entities
    from keras_bert.preprocessing.tasks import DataFileError

    labels = labels_of(task)
    if labels not in ("classes", "tags"):
        return None
    if labels == "tags":
        found = {tag for sentence in data["labels"] for tag in sentence}
        names = given or ["O"] + sorted(found - {"O"})
        for name in names:
            try:
                get_entities([name])
            except ValueError:
                raise _bad_label(task, data["path"], columns, name,
                                 "is not IOB: use 'O', 'B-TYPE', 'I-TYPE' "
                                 "(entity F1 reads IOB1 or IOB2).") from None
    else:
        names = given or sorted(set(data["labels"]), key=lambda v: (
            (0, int(v), "") if _is_int(v) else (1, 0, v)))
    if len(names) < 2:
        raise DataFileError(
            f"{data['path']}: every example has the label {names[0]!r}; "
            f"--task {task} needs two or more"
            + (" (use --task regress for numeric targets)."
               if labels == "classes" else "."))
    return names


def check_model_labels(task, data, names, columns):
    """Refuses a label the model does not spell (`names`, from its
    finetune.json or id2label): "0" and "1" are not taken for "neg" and
    "pos". Names that say nothing ("LABEL_0", "LABEL_1", ...) take ids."""
    kind = labels_of(task)
    if kind not in ("classes", "tags") or not names or list(
            names) == [f"LABEL_{i}" for i in range(len(names))]:
        return
    labels = data["labels"]
    found = ({tag for sentence in labels for tag in sentence}
             if kind == "tags" else set(labels))
    unknown = sorted(found - set(names))
    if unknown:
        raise _bad_label(task, data["path"], columns, unknown[0],
                         f"is not one of the model's labels "
                         f"({', '.join(names)}); spell them as the model "
                         "was fine-tuned with (its finetune.json), or map "
                         "ids to names with --labels.")


def encode_labels(task, data, names, columns):
    """The file's labels as model targets; a bad one names its line."""
    import numpy as np

    path, labels = data["path"], data.get("labels")
    kind = labels_of(task)
    if kind == "span":
        return None
    if kind == "number":
        for value in labels:
            try:
                float(value)
            except ValueError:
                raise _bad_label(task, path, columns, value, "is not a "
                                 f"number; --task {task} needs numeric "
                                 "targets.") from None
        return np.array([float(value) for value in labels], "float32")
    if kind == "choice":
        count = len(columns["choices"])
        for value in labels:
            if not _is_int(value) or not 0 <= int(value) < count:
                raise _bad_label(
                    task, path, columns, value, f"is out of range: give the "
                    f"0-based index of the right one of the {count} choices "
                    f"(0..{count - 1}).")
        return np.array([int(value) for value in labels])
    index = {name: i for i, name in enumerate(names)}
    # Ids in the file stand for the names only when no name is a number.
    ids_allowed = not any(_is_int(name) for name in names)

    def label_id(value):
        if value in index:
            return index[value]
        if ids_allowed and _is_int(value) and 0 <= int(value) < len(names):
            return int(value)
        problem = (f"is out of range for the {len(names)} labels "
                   f"(ids 0..{len(names) - 1})" if ids_allowed and
                   _is_int(value) else
                   f"is not one of the {len(names)} labels the model knows "
                   f"({', '.join(names)})")
        raise _bad_label(task, path, columns, value, problem + "; the "
                         "training and validation files must share one "
                         "label set (or list them all with --labels).")

    if kind == "tags":
        return [[label_id(tag) for tag in sentence] for sentence in labels]
    return np.array([label_id(value) for value in labels])


def score(model, task, data, names, batch_size=32):
    """The task's scores (percentages) of `model` on `read_task_data` output
    with "y" from `encode_labels`; keys as `keras_bert.metrics` names them."""
    import numpy as np

    from keras_bert import metrics

    options = {"batch_size": batch_size, "verbose": 0}
    kind = labels_of(task)
    if kind == "span":
        questions = data["questions"]
        answers = model.answer(
            [q["question"] for q in questions],
            [q["context"] for q in questions], **options)
        return metrics.squad_scores(
            {q["id"]: a["text"] for q, a in zip(questions, answers)},
            {q["id"]: [r["text"] for r in q["answers"]] for q in questions})
    if kind == "tags":
        predicted = model.predict_words(data["x"], **options)
        result = metrics.entity_scores(
            data["labels"], [[names[i] for i in s] for s in predicted])
        return {k: v for k, v in result.items() if k != "per_type"}
    logits = np.asarray(model.predict(data["x"], **options))
    if kind == "number":
        return metrics.regression_scores(data["y"], logits[:, 0])
    return metrics.classification_scores(data["y"], logits.argmax(-1))
