"""`keras-bert predict`: runs a fine-tuned model on raw text.

    echo "a gripping, beautifully acted film" | \
        keras-bert predict --model runs/sst2/best
    keras-bert predict --model runs/squad/best --input questions.tsv

One example per input line (blank lines are skipped), its fields separated
by tabs: the text (classify, regress); text and second text (pair); the
words, separated by spaces (ner); question and context (squad); prompt
and then each choice (choice). One line of output per example: the label
and its probability (classify, pair), the score (regress), `word/TAG`
pairs (ner), the answer text (squad; empty when no span is valid), the
index, probability and text of the best choice (choice). `--format json`
prints one JSON object per example with every probability.
"""

import json
import os
import sys

from keras_bert.commands.model_argument import huggingface_task
from keras_bert.commands.model_argument import resolve_model
from keras_bert.commands.precision_argument import add_precision_argument
from keras_bert.commands.precision_argument import apply_precision
from keras_bert.commands.precision_argument import load_overrides
from keras_bert.commands.task_files import inputs_of
from keras_bert.commands.task_files import labels_of
from keras_bert.tasks.registry import command_names
from keras_bert.tasks.registry import load_class
from keras_bert.tasks.registry import record_of_model

# Written into a fine-tuned preset: the task, label names and columns.
TASK_FILE = "finetune.json"
# `columns["text_pair"]` of a classifier that reads one text or a pair.
PAIR_OPTIONAL = "optional"

# The tab-separated fields of a line, by the task's `inputs` kind (a
# prompt's choices are named by the model's columns).
_FIELDS = {"text": ("text",), "pair": ("text", "text pair"),
           "question_context": ("question", "context"), "words": ("words",)}


def add_parser(subparsers):
    parser = subparsers.add_parser(
        "predict",
        help="run a fine-tuned model on text from a file or stdin",
        description=__doc__.split("\n\n", 2)[2],
    )
    parser.add_argument("--model", required=True, metavar="DIR_OR_NAME",
                        help="a fine-tuned preset (e.g. OUTPUT/best), or a "
                        "fine-tuned Hugging Face model by name or directory "
                        "(e.g. dslim/bert-base-NER)")
    parser.add_argument("--input", metavar="FILE",
                        help="examples, one a line (default: stdin)")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--batch-size", type=int, default=32)
    add_precision_argument(parser)
    parser.set_defaults(func=run)


def _model_task(model):
    """The task of a task preset saved without a finetune.json: the
    `--task` of its task record (see `TaskRecord.default_command`)."""
    from keras_bert.checkpoints import CheckpointError

    record = record_of_model(model)
    command = None if record is None else record.default_command(
        regressor=getattr(model, "num_classes", None) == 1)
    if command is None:
        raise CheckpointError(
            f"The preset holds a {type(model).__name__}, not a fine-tuned "
            "task model; give the OUTPUT/best directory of `keras-bert "
            "finetune`.")
    return command.name


def read_task_info(model_dir):
    """The finetune.json of a fine-tuned preset ("task", "labels",
    "columns"), or None when the directory has none."""
    from keras_bert.checkpoints import CheckpointError
    from keras_bert.checkpoints.checkpoint_error import naming_file

    if not os.path.isdir(model_dir):
        raise CheckpointError(f"--model {model_dir}: no such directory.")
    path = os.path.join(model_dir, TASK_FILE)
    if not os.path.isfile(path):
        return None
    with naming_file(path), open(path, encoding="utf-8") as handle:
        info = json.load(handle)
    if info.get("task") not in command_names():
        raise CheckpointError(
            f"{path}: task {info.get('task')!r} is not a --task of any "
            f"registered task ({', '.join(command_names())}); a task of "
            "your own runs where its record is registered "
            "(keras_bert.tasks.register_task, then keras_bert.cli.main).")
    return info


def _load_huggingface_task(model_dir, precision):
    """`(model, info)` for a fine-tuned Hugging Face checkpoint, or None
    (also for one whose choices have no column names to read)."""
    found = huggingface_task(model_dir)
    if found is None or found[0].inputs == "prompt_choices":
        return None
    command, record = found
    model = apply_precision(load_class(record.model_class).from_preset(
        model_dir, **load_overrides(precision)), precision)
    labels = getattr(model, "label_names", None) or [
        f"LABEL_{i}" for i in range(getattr(model, "num_classes", 0))]
    # A sequence classifier reads one text or a pair, as each line has.
    columns = {"text_pair": PAIR_OPTIONAL} if command.inputs == "text" else {}
    return model, {"task": command.name, "columns": columns,
                   "labels": labels}


def load_finetuned(model_dir, precision="float32"):
    """`(model, info)`: a fine-tuned model and its task info.

    A preset of `keras-bert finetune` brings its finetune.json (see
    `read_task_info`); a task preset saved from Python gets the task of
    its class and its `label_names` (else "LABEL_0", "LABEL_1", ...); a
    fine-tuned Hugging Face checkpoint (`BertForSequenceClassification`,
    `...TokenClassification`, `...QuestionAnswering`) the task of its
    architecture and its `id2label`. `precision` is a `--precision`
    choice.
    """
    from keras_bert import checkpoints
    from keras_bert.checkpoints import checkpoint_files

    info = read_task_info(model_dir)
    layout = checkpoints.detect_layout(model_dir)
    loaded = (_load_huggingface_task(model_dir, precision)
              if layout == checkpoint_files.HUGGINGFACE else None)
    if loaded is not None:
        return loaded
    if layout != checkpoint_files.KERAS_BERT:
        raise checkpoints.CheckpointError(
            f"--model {model_dir} is a pretrained "
            f"{checkpoint_files.LAYOUT_NAMES[layout]} "
            "checkpoint, not a fine-tuned model: predict and evaluate read "
            "what `keras-bert finetune` writes (its OUTPUT/best). Fine-tune "
            f"it first: keras-bert finetune --model {model_dir} ...")
    model = apply_precision(checkpoints.load_preset_model(
        model_dir, backbone_overrides=load_overrides(precision)), precision)
    if getattr(model, "preprocessor", None) is None:
        raise checkpoints.CheckpointError(
            f"{model_dir}: the model has no preprocessor, so it cannot read "
            "text; fine-tune with `keras-bert finetune`, or attach a "
            "preprocessor before saving.")
    if info is None:
        count = getattr(model, "num_classes", 0)
        choices = [f"choice {i}" for i in range(
            getattr(model, "num_choices", 0))]
        info = {"task": _model_task(model), "columns": {"choices": choices},
                "labels": getattr(model, "label_names", None) or [
                    f"LABEL_{i}" for i in range(count)]}
    return model, info


def save_task_info(model_dir, info):
    """Writes `info` as the finetune.json of a fine-tuned preset."""
    with open(os.path.join(model_dir, TASK_FILE), "w",
              encoding="utf-8") as handle:
        json.dump(info, handle, indent=2)
        handle.write("\n")


def _read_rows(path, info):
    """The tab-separated fields of each non-blank line, checked per task."""
    from keras_bert.preprocessing.tasks import DataFileError

    source, task, columns = path or "stdin", info["task"], info["columns"]
    inputs = inputs_of(task)
    if path:
        if not os.path.isfile(path):
            raise DataFileError(f"{path}: no such file.")
        with open(path, encoding="utf-8-sig") as handle:
            lines = handle.read().splitlines()
    else:
        lines = sys.stdin.read().splitlines()
    if inputs == "prompt_choices":
        names = ("prompt", *columns["choices"])
    elif inputs == "text_or_pair":
        names = _FIELDS["pair" if columns.get("text_pair") else "text"]
    else:
        names = _FIELDS[inputs]
    rows = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        fields = [line] if inputs == "words" else line.split("\t")
        if columns.get("text_pair") == PAIR_OPTIONAL and not rows:
            # The first line sets whether all are single texts or pairs.
            names = _FIELDS["pair" if len(fields) == 2 else "text"]
        if len(fields) != len(names):
            raise DataFileError(
                f"{source}:{number}: {len(fields)} tab-separated fields; "
                f"--task {task} takes {len(names)}: {', '.join(names)}.")
        rows.append(fields)
    if not rows:
        raise DataFileError(f"{source}: no input lines (one example a line, "
                            "fields separated by tabs).")
    return rows


def _softmax(logits):
    import numpy as np

    exp = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return exp / exp.sum(axis=-1, keepdims=True)


def predictions(model, task, rows, labels, batch_size=32):
    """One dict per row of input fields: what the model predicts for it."""
    import numpy as np

    options = {"batch_size": batch_size, "verbose": 0}
    columns = list(zip(*rows))
    kind = labels_of(task)
    if kind == "span":
        answers = model.answer(list(columns[0]), list(columns[1]),
                               **options)
        # No valid span scores -inf, which JSON cannot hold: null instead.
        return [{"answer": a["text"], "start": a["start"], "end": a["end"],
                 "score": a["score"] if np.isfinite(a["score"]) else None}
                for a in answers]
    if kind == "tags":
        words = [fields[0].split() for fields in rows]
        tags = model.predict_words(words, **options)
        return [{"words": w, "tags": [labels[i] for i in t]}
                for w, t in zip(words, tags)]
    if kind == "choice":
        x = (list(columns[0]), [list(fields[1:]) for fields in rows])
    else:
        x = tuple(map(list, columns)) if len(columns) == 2 else list(
            columns[0])
    logits = np.asarray(model.predict(x, **options), "float64")
    if kind == "number":
        return [{"score": float(value)} for value in logits[:, 0]]
    probabilities = _softmax(logits)
    best = probabilities.argmax(-1)
    if kind == "choice":
        return [{"choice": int(b), "text": fields[1 + b],
                 "probability": float(p[b]), "probabilities": p.tolist()}
                for fields, b, p in zip(rows, best, probabilities)]
    return [{"label": labels[b], "probability": float(p[b]),
             "probabilities": dict(zip(labels, p.tolist()))}
            for b, p in zip(best, probabilities)]


def format_prediction(task, prediction):
    """The one-line text form of a prediction."""
    kind = labels_of(task)
    if kind == "span":
        return prediction["answer"]
    if kind == "tags":
        return " ".join(f"{word}/{tag}" for word, tag in
                        zip(prediction["words"], prediction["tags"]))
    if kind == "number":
        return f"{prediction['score']:.4f}"
    if kind == "choice":
        return (f"{prediction['choice']}\t{prediction['probability']:.4f}\t"
                f"{prediction['text']}")
    return f"{prediction['label']}\t{prediction['probability']:.4f}"


def run(args):
    model_dir = resolve_model(args.model)
    # Bad input fails before the (slow) model load when the task is known.
    info = read_task_info(model_dir)
    rows = _read_rows(args.input, info) if info else None
    model, info = load_finetuned(model_dir, args.precision)
    rows = rows or _read_rows(args.input, info)
    task = info["task"]
    for prediction in predictions(model, task, rows, info.get("labels"),
                                  args.batch_size):
        print(json.dumps(prediction) if args.format == "json"
              else format_prediction(task, prediction))
    return 0
