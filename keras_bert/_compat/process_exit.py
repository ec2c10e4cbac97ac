"""The `atexit` functions run now, for a program that then ends with
`os._exit`.

`atexit` has no public way to run the registered functions before the
interpreter's own exit; CPython's `atexit._run_exitfuncs` does it (each
function once: the registry is cleared as it runs, so the interpreter's
exit finds none left). Present in CPython 3.x, checked on 3.10 and 3.11.
"""

import atexit


def run_exit_functions():
    """Runs and clears the `atexit` functions, last registered first, and
    returns True; returns False (running nothing) where this Python has
    no way to: the caller then exits as usual."""
    run = getattr(atexit, "_run_exitfuncs", None)
    if run is None:
        return False
    run()
    return True
