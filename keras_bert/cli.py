"""The `keras-bert` command line: one sub-command per module in `commands/`.

Each module in `keras_bert.commands` defines `add_parser(subparsers)`, which
registers its arguments and sets `func` to the function that runs it.
"""

import argparse
import importlib
import sys

# Sub-command modules in the order `keras-bert --help` lists them.
COMMANDS = (
    "demo",
    "pretrain",
    "fill_mask",
    "finetune",
    "predict",
    "evaluate",
    "convert",
    "export",
    "embed",
    "search",
)


def build_parser():
    parser = argparse.ArgumentParser(
        prog="keras-bert",
        description="BERT for Keras 3 on TensorFlow, JAX and PyTorch "
        "(choose with KERAS_BACKEND).",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"keras_bert.commands.{name}")
        except ModuleNotFoundError as error:
            if error.name != f"keras_bert.commands.{name}":
                raise
            continue
        module.add_parser(subparsers)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    return args.func(args) or 0


if __name__ == "__main__":
    sys.exit(main())
