"""What the example scripts share: model/tokenizer arguments and output.

Every fine-tuning example takes either `--preset DIR_OR_NAME` (a Hugging
Face, Google or keras_bert directory with weights and vocabulary, or a
pretrained model's name such as google-bert/bert-base-uncased: the real use)
or `--config NAME --vocabulary vocab.txt` (a randomly initialized model of
a named size: for smoke runs), plus `--max-examples N` to use a slice.
Training examples record their loss and metrics after every step
(`TrainingCurves`) and draw them to `<output>/curves.png`, next to
`metrics.json`.
"""

import json
import os
import sys

import keras

from keras_bert.models import BertBackbone
from keras_bert.preprocessing import BertTokenizer


def add_model_arguments(parser, epochs=3, learning_rate=5e-5,
                        sequence_length=128, batch_size=32):
    """Adds the model, training-size and output flags every example takes."""
    model = parser.add_argument_group("model")
    model.add_argument("--preset", metavar="DIR_OR_NAME",
                       help="checkpoint directory (Hugging Face, Google or "
                       "keras_bert preset) with weights and vocabulary, or a "
                       "pretrained model's name")
    model.add_argument("--config", metavar="NAME",
                       help="a named size (tiny, mini, small, base, ...) with "
                       "random weights, instead of --preset")
    model.add_argument("--vocabulary", metavar="VOCAB",
                       help="vocab.txt for --config")
    model.add_argument("--cased", action="store_true",
                       help="with --config: keep case")
    run = parser.add_argument_group("run")
    run.add_argument("--max-examples", type=int, metavar="N",
                     help="use only the first N examples of each split")
    run.add_argument("--epochs", type=int, default=epochs)
    run.add_argument("--batch-size", type=int, default=batch_size)
    run.add_argument("--learning-rate", type=float, default=learning_rate)
    run.add_argument("--sequence-length", type=int, default=sequence_length)
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--output", metavar="DIR",
                     help="where to write metrics.json (and, for training, "
                     "curves.png and training_log.json)")


def load_backbone_and_tokenizer(args):
    """`(backbone, tokenizer)` from `--preset`, or `--config` + `--vocabulary`."""
    keras.utils.set_random_seed(args.seed)
    if args.preset:
        return (BertBackbone.from_preset(args.preset),
                BertTokenizer.from_preset(args.preset))
    if not (args.config and args.vocabulary):
        raise SystemExit(
            "Give --preset DIR_OR_NAME (a checkpoint with vocabulary), or --config "
            "NAME with --vocabulary vocab.txt for a randomly initialized "
            "model."
        )
    tokenizer = BertTokenizer(args.vocabulary,
                              lowercase=not args.cased)
    # The vocabulary decides the embedding size, whatever the named size says.
    backbone = BertBackbone.from_preset(
        args.config, vocabulary_size=tokenizer.vocabulary_size())
    return backbone, tokenizer


def first(items, max_examples):
    """The first `max_examples` items (all when None)."""
    return items if max_examples is None else items[:max_examples]


def data_file(directory, *names):
    """The first of `names` that exists in `directory`, or a clear exit."""
    for name in names:
        path = os.path.join(directory, name)
        if os.path.exists(path):
            return path
    raise SystemExit(f"None of {names} is in {directory}; see the script's "
                     "docstring for where to get the data.")


class TrainingCurves(keras.callbacks.Callback):
    """Records the training loss and metrics after every optimizer step.

    Keras reports, after each step, the mean over the epoch so far; those
    are the values kept, one row per step: `{"step": 1, "loss": ...}`.
    """

    def __init__(self):
        super().__init__()
        self.rows = []

    def on_train_batch_end(self, batch, logs=None):
        row = {"step": len(self.rows) + 1}
        logs = logs or {}
        row.update({name: float(value) for name, value in logs.items()})
        self.rows.append(row)


def plot_curves(rows, path, title):
    """Draws each recorded quantity against the step, one panel each."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    # The loss first, then the metrics in the order Keras logs them.
    names = sorted((name for name in rows[0] if name != "step"),
                   key=lambda name: name != "loss")
    figure, axes = plt.subplots(1, len(names), squeeze=False,
                                figsize=(5 * len(names), 3.5))
    steps = [row["step"] for row in rows]
    for axis, name in zip(axes[0], names):
        axis.plot(steps, [row.get(name) for row in rows], marker=".")
        axis.set_title(name)
        axis.set_xlabel("step")
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))
        axis.grid(alpha=0.3)
    figure.suptitle(f"{title}: training, mean over the epoch so far")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def write_metrics(args, metrics, curves=None):
    """Prints the metrics; with `--output`, writes them and the curves.

    `<output>/metrics.json` gets `metrics`; with `curves` (a
    `TrainingCurves`), `<output>/training_log.json` gets its rows and
    `<output>/curves.png` their plot.
    """
    print(json.dumps(metrics, indent=2))
    if not args.output:
        return
    os.makedirs(args.output, exist_ok=True)
    with open(os.path.join(args.output, "metrics.json"), "w") as file:
        json.dump(metrics, file, indent=2)
    if curves is not None and curves.rows:
        with open(os.path.join(args.output, "training_log.json"), "w") as file:
            json.dump(curves.rows, file, indent=2)
        plot = os.path.join(args.output, "curves.png")
        title = f"{os.path.basename(sys.argv[0])} ({keras.config.backend()})"
        plot_curves(curves.rows, plot, title)
        print(f"curves: {plot}")
