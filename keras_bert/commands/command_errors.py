"""How a command fails: one line on stderr, the traceback with --verbose."""

import sys
import traceback

from keras_bert.commands.quiet_logs import quiet_logs


def run_command(args):
    """Runs `args.func(args)`; returns the exit status.

    Any failure prints one line on stderr, `keras-bert COMMAND: error:
    PROBLEM`, where the problem names the file it comes from (the
    checkpoint loaders and data readers name theirs), and returns 2 for
    bad input (a `ValueError` or `OSError`: every checkpoint, data and
    option error is one) or 1 for anything else, whose type is named.
    `--verbose` prints the traceback above the line. `SystemExit` and
    Ctrl-C pass through.
    """
    try:
        if args.verbose:
            return args.func(args) or 0
        with quiet_logs():
            return args.func(args) or 0
    except Exception as error:
        from keras_bert.checkpoints.checkpoint_error import error_summary

        if args.verbose:
            traceback.print_exc()
        bad_input = isinstance(error, (ValueError, OSError))
        line = error_summary(error)
        if not bad_input:
            line = f"{type(error).__name__}: {line}" + (
                "" if args.verbose else " (--verbose shows the traceback)")
        print(f"keras-bert {args.command}: error: {line}", file=sys.stderr)
        return 2 if bad_input else 1
