"""`keras-bert finetune`: fine-tunes a pretrained BERT on labelled files.

    keras-bert finetune --task classify --train sst2/train.tsv \
        --validation sst2/dev.tsv --model bert-base-uncased/ \
        --output runs/sst2 --text-column sentence

Tasks: classify (one text), pair (two texts), regress (a number for a
text or a pair), ner (CoNLL column files), squad (SQuAD v1.1 JSON) and
choice (a prompt and one column per choice). Training follows the paper:
AdamW, linear warmup over the first 10% of the steps, linear decay to 0.
After every epoch the validation file is scored (accuracy/F1, entity F1,
EM/F1, ...); the best epoch's model is kept as a preset in OUTPUT/best
with its label names (finetune.json), for `keras-bert predict` and
`keras-bert evaluate`; with --lora-rank, its adapters and head alone also
in OUTPUT/best.lora.safetensors (`load_lora_weights` onto --model).
OUTPUT also gets metrics.csv and metrics.jsonl (a row per epoch),
results.json and curves.png.
"""

import json
import math
import os
import time

from keras_bert.commands import task_files
from keras_bert.commands.distribution_arguments import (
    add_distribution_arguments)
from keras_bert.commands.distribution_arguments import (
    distribution_from_args)
from keras_bert.commands.model_argument import resolve_model
from keras_bert.tasks.registry import command_names
from keras_bert.tasks.registry import find_command
from keras_bert.tasks.registry import load_class


def add_parser(subparsers):
    parser = subparsers.add_parser(
        "finetune",
        help="fine-tune BERT on a labelled file "
        f"({', '.join(command_names())})",
        description=__doc__.split("\n\n", 2)[2],
    )
    parser.add_argument("--task", choices=command_names(), required=True)
    parser.add_argument("--train", required=True, metavar="FILE",
                        help="TSV/CSV/JSONL (CoNLL for ner, SQuAD JSON for "
                        "squad)")
    parser.add_argument("--validation", required=True, metavar="FILE")
    parser.add_argument("--model", required=True, metavar="DIR_OR_NAME",
                        help="pretrained checkpoint with its vocabulary: a "
                        "Hugging Face, Google or keras_bert directory, or a "
                        "name (google-bert/bert-base-uncased, "
                        "bert_base_en_uncased)")
    parser.add_argument("--output", required=True, metavar="DIR",
                        help="where the best model (DIR/best), metrics and "
                        "curves go")
    task_files.add_data_arguments(parser)
    training = parser.add_argument_group("training")
    training.add_argument("--epochs", type=int, default=3,
                          help="passes over --train (default 3)")
    training.add_argument("--batch-size", type=int, default=32,
                          help="examples per device and step (default 32)")
    training.add_argument("--sequence-length", type=int,
                          help="tokens per example (default 128; squad 384)")
    training.add_argument("--learning-rate", type=float,
                          help="peak rate (default: the paper's 5e-5; 2e-3 "
                          "with --lora-rank)")
    training.add_argument("--lora-rank", type=int, metavar="RANK",
                          help="train LoRA adapters of this rank on the "
                          "query/key/value projections and the head, the "
                          "rest of the backbone frozen (OUTPUT/best holds "
                          "the merged weights, OUTPUT/best.lora.safetensors "
                          "the adapters and head alone)")
    training.add_argument("--warmup-ratio", type=float, default=0.1,
                          help="share of the steps warming up (default "
                          "0.1), then linear decay to 0")
    training.add_argument("--weight-decay", type=float, default=0.01,
                          help="AdamW's decoupled decay (default 0.01)")
    training.add_argument("--doc-stride", type=int,
                          help="squad: tokens between window starts "
                          "(default 128, or half the room a window leaves "
                          "for context when that is less)")
    training.add_argument("--seed", type=int, default=0)
    add_distribution_arguments(parser)
    parser.set_defaults(func=run)


def build_task_model(task, backbone, tokenizer, sequence_length,
                     num_labels=None, num_choices=None, doc_stride=None):
    """The model of `task`'s record on `backbone`, with its preprocessor.

    Its `labels` kind sizes the head: one unit per class or tag, one for a
    number, `num_choices` choices; span tasks window their context every
    `doc_stride` tokens.
    """
    record, command = find_command(task)
    head = {"classes": {"num_classes": num_labels},
            "tags": {"num_classes": num_labels},
            "number": {"num_classes": 1},
            "choice": {"num_choices": num_choices}}.get(command.labels, {})
    windows = {"doc_stride": doc_stride} if command.labels == "span" else {}
    preprocessor = load_class(record.preprocessor_class)(
        tokenizer, sequence_length, **windows)
    return load_class(record.model_class)(backbone, preprocessor=preprocessor,
                                          **head)


def fit_data(task, model, data):
    """`(x, y)` for `model.fit`: raw input, or SQuAD's labelled windows."""
    if task_files.labels_of(task) != "span":
        return data["x"], data["y"]
    questions = data["questions"]
    windows = model.preprocessor.windows(
        [q["question"] for q in questions], [q["context"] for q in questions],
        answers=[(q["answers"][0]["answer_start"], q["answers"][0]["text"])
                 for q in questions])
    return windows["inputs"], windows["labels"]


def _check_output(output):
    best = os.path.join(output, "best")
    if os.path.isdir(best) and os.listdir(best) and not os.path.isfile(
            os.path.join(best, "config.json")):
        raise task_files.UsageError(
            f"{best} holds files that are not a model; choose another "
            "--output.")
    if os.path.isfile(os.path.join(best, "config.json")):
        print(f"{output} holds an earlier run: its best/ is replaced when "
              "this run's first epoch is scored.")


def _load_pretrained(path):
    from keras_bert.models.bert_backbone import BertBackbone
    from keras_bert.preprocessing import BertTokenizer

    return BertBackbone.from_preset(path), BertTokenizer.from_preset(path)


def _print_plan(args, train, validation, names, model, length, steps,
                batch_size, windows=None):
    import keras

    backbone = model.backbone
    print(f"keras-bert finetune --task {args.task} on "
          f"{keras.config.backend()} -> {args.output}")
    print(f"train: {train['count']:,} examples ({args.train})"
          + (f" in {windows:,} windows" if windows else "")
          + f"; validation: {validation['count']:,} ({args.validation})"
          + (f"; labels: {', '.join(names)}" if names else ""))
    trained = sum(math.prod(w.shape) for w in model.trainable_weights)
    print(f"model: {backbone.num_layers} layers, hidden "
          f"{backbone.hidden_dim}, {model.count_params():,} parameters"
          + (f", {trained:,} of them trained (LoRA rank {args.lora_rank})"
             if args.lora_rank else "")
          + f"; {length} tokens per example")
    epochs = f"{args.epochs} epoch" + ("s" if args.epochs != 1 else "")
    print(f"training: {epochs}, {steps:,} steps of {batch_size}, "
          f"AdamW, peak lr {args.learning_rate:g}, {args.warmup_ratio:.0%} "
          "warmup, linear decay")


def _write_results(path, args, info, train, validation, rows, best,
                   seconds):
    import keras

    with open(path, "w") as handle:
        json.dump({**info, "validation": args.validation,
                   "backend": keras.config.backend(),
                   "train_examples": train["count"],
                   "validation_examples": validation["count"],
                   "recipe": {k: getattr(args, k) for k in (
                       "epochs", "batch_size", "learning_rate", "lora_rank",
                       "warmup_ratio", "weight_decay", "seed")},
                   "best": best, "epochs": rows, "seconds": round(seconds, 1)},
                  handle, indent=2)


def run(args):
    started = time.perf_counter()
    # Every input is read and checked before a framework loads, so a
    # mistake is reported at once.
    if args.lora_rank is not None and args.lora_rank < 1:
        raise task_files.UsageError(
            f"--lora-rank must be at least 1, got {args.lora_rank}.")
    task = args.task
    command = find_command(task)[1]
    spans = command.labels == "span"
    columns = task_files.resolve_columns(task, args)
    train, validation = (
        task_files.read_task_data(task, path, columns, args.max_examples,
                                  args.skip_bad_rows)
        for path in (args.train, args.validation))
    names = task_files.label_names(task, train, columns, args.labels)
    for data in (train, validation):
        data["y"] = task_files.encode_labels(task, data, names, columns)
    model_dir = resolve_model(args.model)

    import keras

    from keras_bert.checkpoints import save_to_preset
    from keras_bert.commands.epoch_scores import EpochScores
    from keras_bert.commands.predict import save_task_info
    from keras_bert.training import distribution

    keras.utils.set_random_seed(args.seed)
    engine = distribution_from_args(args)
    chief = distribution.is_chief(engine)
    output = args.output if chief else None
    if output:
        _check_output(output)
    batch_size = distribution.global_batch_size(args.batch_size, engine)
    with distribution.distribution_scope(engine):
        backbone, tokenizer = _load_pretrained(model_dir)
        # The default fits the model; a --sequence-length beyond its
        # positions is refused by the task model.
        length = args.sequence_length or min(command.sequence_length,
                                             backbone.max_sequence_length)
        model = build_task_model(
            task, backbone, tokenizer, length, len(names or ()),
            len(columns["choices"] or ()), args.doc_stride)
        if args.lora_rank:
            model.backbone.enable_lora(args.lora_rank)
        x, y = fit_data(task, model, train)
        steps = math.ceil(len(y) / batch_size) * args.epochs
        if args.learning_rate is None:
            args.learning_rate = model.default_learning_rate()
        # Scores come from keras_bert.metrics each epoch, not Keras metrics.
        model.compile(learning_rate=args.learning_rate, num_train_steps=steps,
                      warmup_ratio=args.warmup_ratio,
                      weight_decay=args.weight_decay, metrics=[])
        _print_plan(args, train, validation, names, model, length, steps,
                    batch_size, windows=len(y) if spans else None)
        info = {"task": task, "labels": names, "columns": columns,
                "sequence_length": length, "train": args.train}
        best_dir = os.path.join(args.output, "best")
        adapters = os.path.join(args.output, "best.lora.safetensors")

        def save(row):
            save_to_preset(model, best_dir)
            save_task_info(best_dir, {**info, "epoch": row["epoch"],
                                      "scores": row})
            if args.lora_rank:
                model.save_lora_weights(adapters)

        callback = EpochScores(
            lambda: task_files.score(model, task, validation, names,
                                     batch_size),
            command.monitor, save, output)
        validation_data = (None if spans
                           else (validation["x"], validation["y"]))
        if output:
            # Made now: a run that fails before training leaves no folder.
            os.makedirs(output, exist_ok=True)
        model.fit(x, y, batch_size=batch_size, epochs=args.epochs,
                  validation_data=validation_data, callbacks=[callback])
    best = callback.best
    print(f"best epoch {best['epoch']} of {args.epochs}: " + ", ".join(
        f"{k[4:]} {v:.2f}" for k, v in best.items()
        if k.startswith("val_") and k != "val_loss"))
    if not output:
        return 0
    from keras_bert.training.loss_curves import plot_finetuning_curves

    plotted = plot_finetuning_curves(
        callback.rows, os.path.join(output, "curves.png"),
        f"keras-bert finetune --task {task}")
    _write_results(os.path.join(output, "results.json"), args, info, train,
                   validation, callback.rows, best,
                   time.perf_counter() - started)
    print(f"model: {best_dir}  (keras-bert predict --model {best_dir})")
    if args.lora_rank:
        print(f"adapters alone: {adapters}  (task.load_lora_weights onto "
              f"{args.model})")
    print(f"logs: {output}/metrics.csv, metrics.jsonl, results.json"
          + (", curves.png" if plotted else " (no plot: pip install "
             "matplotlib)"))
    return 0
