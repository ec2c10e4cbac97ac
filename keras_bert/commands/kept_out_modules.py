"""Modules a `keras-bert` command keeps out of its process.

`import keras` also imports, when they are installed, scikit-learn (for
`keras.wrappers`), matplotlib's pyplot (for `keras.visualization`) and JAX
(for `keras.callbacks.OrbaxCheckpoint`) under any backend; each import is
guarded, and Keras runs without them. No command uses scikit-learn; only
`pretrain` and `finetune` draw (matplotlib); JAX runs nothing under
another backend. Together they are a large part of a one-line command's
cold start (docs/performance.md, "Cold start"), so the CLI keeps them out
for the command's run: their `sys.modules` entries are `None` (Python's
own spelling of "import fails"), removed again when the command returns.
This is the CLI's choice for its own process; `import keras_bert` in a
user's program changes no entry.
"""

import contextlib
import os
import sys

# Keras' guarded imports that no command needs.
NEVER_USED = ("sklearn",)
# Commands that draw loss curves (keras_bert.training.loss_curves).
DRAWING_COMMANDS = ("pretrain", "finetune")
BACKENDS = ("tensorflow", "jax", "torch")


def modules_to_keep_out(command, backend=None):
    """The top-level modules `command` runs without.

    Args:
        command: str. The sub-command's name as typed (`embed`,
            `fill-mask`, ...).
        backend: str or None. `KERAS_BACKEND`; JAX is kept out only when
            it names another backend (Keras' own default may be set in
            `keras.json`, which this does not read).

    Example:
    >>> modules_to_keep_out("embed", "torch")
    ('sklearn', 'matplotlib', 'jax')
    >>> modules_to_keep_out("finetune", "jax")
    ('sklearn',)
    """
    names = list(NEVER_USED)
    if command not in DRAWING_COMMANDS:
        names.append("matplotlib")
    if backend in BACKENDS and backend != "jax":
        names.append("jax")
    return tuple(names)


@contextlib.contextmanager
def kept_out(names):
    """Within the block, importing any of `names` (or a submodule) raises
    ImportError; modules already imported are left as they are.

    Example:
    >>> with kept_out(["a_module_nobody_has"]):
    ...     try:
    ...         import a_module_nobody_has
    ...     except ImportError:
    ...         print("kept out")
    kept out
    """
    blocked = [name for name in names if name not in sys.modules]
    for name in blocked:
        sys.modules[name] = None
    try:
        yield
    finally:
        for name in blocked:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]


def command_kept_out(command):
    """`kept_out` of `modules_to_keep_out(command, $KERAS_BACKEND)`."""
    return kept_out(modules_to_keep_out(
        command, os.environ.get("KERAS_BACKEND")))
