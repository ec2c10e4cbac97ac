"""The `keras-bert` command line: one sub-command per module in `commands/`.

Each module in `keras_bert.commands` defines `add_parser(subparsers)`, which
registers its arguments and sets `func` to the function that runs it.
Modules import Keras and TensorFlow inside the functions that run, so
`--help` answers at once; log noise of TensorFlow's C++ libraries is kept
off the terminal unless `--verbose` (see `commands/quiet_logs.py`), and a
failure is one line on stderr, with its traceback only under `--verbose`
(`commands/command_errors.py`). A command runs with glibc keeping freed
memory for reuse (`tune_malloc`; `KERAS_BERT_TUNE_MALLOC=0` keeps glibc's
defaults), a setting of the whole process that the package leaves to its
programs; and without the modules Keras imports but the command never uses
(`commands/kept_out_modules.py`). The program (`program`, not `main`)
ends without the interpreter's teardown (`commands/program_exit.py`).
"""

import argparse
import importlib

from keras_bert.commands.command_errors import run_command
from keras_bert.commands.kept_out_modules import command_kept_out
from keras_bert.commands.program_exit import exit_program
from keras_bert.memory import tune_malloc_unless_opted_out

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
    parser.add_argument(
        "--verbose", action="store_true",
        help="show the log lines of TensorFlow, absl, CUDA and XLA (hidden "
        "by default)")
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
    # Before any backend starts its threads: a thread keeps the allocator
    # arena it first used.
    tune_malloc_unless_opted_out()
    with command_kept_out(args.command):
        return run_command(args)


def program():
    """The `keras-bert` program: `main` on `sys.argv`, then the process
    ends without the interpreter's teardown (`commands/program_exit.py`)."""
    exit_program(main())


if __name__ == "__main__":
    program()
