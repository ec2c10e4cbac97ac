"""`keras-bert evaluate`: scores a fine-tuned model on a labelled file.

    keras-bert evaluate --model runs/sst2/best --data dev.tsv

The task, the columns and the label names come from the `finetune.json`
that `keras-bert finetune` writes into the model directory; the options
override them. Prints the scores as JSON: accuracy (and F1 for two
classes) for classify/pair/choice, Pearson/Spearman/MSE for regress,
entity precision/recall/F1 for ner, exact match/F1 for squad. Files are
read and scored by `keras_bert.commands.task_files`, as in `finetune`.
"""

import json

from keras_bert.commands.precision_argument import add_precision_argument
from keras_bert.commands.task_files import add_data_arguments
from keras_bert.commands.task_files import check_model_labels
from keras_bert.commands.task_files import encode_labels
from keras_bert.commands.model_argument import resolve_model
from keras_bert.commands.task_files import read_task_data
from keras_bert.commands.task_files import resolve_columns
from keras_bert.commands.task_files import score
from keras_bert.tasks.registry import command_names


def add_parser(subparsers):
    parser = subparsers.add_parser(
        "evaluate",
        help="score a fine-tuned model on a labelled file",
        description="Score a model written by `keras-bert finetune` on a "
        "labelled TSV/CSV/JSONL, CoNLL or SQuAD file; print the metrics as "
        "JSON.",
    )
    parser.add_argument("--model", required=True, metavar="DIR_OR_NAME",
                        help="a fine-tuned preset (e.g. OUTPUT/best), or a "
                        "fine-tuned Hugging Face model by name or directory")
    parser.add_argument("--data", required=True, metavar="FILE")
    parser.add_argument("--task", choices=command_names(),
                        help="default: the task the model was fine-tuned on")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--output", metavar="FILE",
                        help="also write the metrics to this JSON file")
    add_precision_argument(parser)
    add_data_arguments(parser)
    parser.set_defaults(func=run)

def run(args):
    from keras_bert.commands.predict import load_finetuned
    from keras_bert.commands.predict import read_task_info

    model_dir = resolve_model(args.model)
    # The data is read and checked before the (slow) model load if it can.
    model, info = None, read_task_info(model_dir)
    if info is None:
        model, info = load_finetuned(model_dir, args.precision)
    task = args.task or info["task"]
    columns = resolve_columns(task, args, info.get("columns"))
    names = args.labels or info.get("labels")
    data = read_task_data(task, args.data, columns, args.max_examples,
                          args.skip_bad_rows)
    if not args.labels and (model is None or getattr(model, "label_names",
                                                     None)):
        # The names the model knows (finetune.json, a checkpoint's
        # id2label) are the only spellings taken.
        check_model_labels(task, data, names, columns)
    data["y"] = encode_labels(task, data, names, columns)
    if model is None:
        model, _ = load_finetuned(model_dir, args.precision)
    result = {"task": task, "data": args.data, "precision": args.precision,
              **score(model, task, data, names, args.batch_size)}
    print(json.dumps(result, indent=2))
    if args.output:
        with open(args.output, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=2)
    return 0
