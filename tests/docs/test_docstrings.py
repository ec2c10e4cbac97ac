"""Runs the `>>>` examples of every public docstring in keras_bert.

The examples are executed under the current backend with `keras_bert`,
`np` and `keras` in scope (plus the names of the module that holds the
docstring), so a docstring whose example rots fails here.
"""

import doctest
import importlib
import pkgutil

import keras
import numpy as np
import pytest

import keras_bert

# Docstrings whose examples cannot run yet, each with the reason. Keep this
# short: an entry is a known gap, not a place to hide a failure.
SKIPPED = {}

OPTIONS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _public(name):
    return not any(part.startswith("_") for part in name.split("."))


def _modules():
    names = ["keras_bert"] + [
        info.name
        for info in pkgutil.walk_packages(keras_bert.__path__, "keras_bert.")
        if _public(info.name)
    ]
    return [importlib.import_module(name) for name in sorted(names)]


def _doctests():
    finder = doctest.DocTestFinder(exclude_empty=True)
    found = {}
    for module in _modules():
        globs = {**vars(module), "keras_bert": keras_bert, "np": np,
                 "keras": keras}
        for test in finder.find(module, globs=globs):
            # A re-exported object is found again from the package that
            # imports it; the defining module's name is the one kept.
            if test.examples and _public(test.name):
                found.setdefault(test.name, test)
    return [found[name] for name in sorted(found)]


DOCTESTS = _doctests()


def test_every_public_class_has_a_runnable_example():
    """The public classes of `keras_bert` carry at least one example each."""
    tested = {test.name.rsplit(".", 1)[-1] for test in DOCTESTS}
    classes = [
        name for name in getattr(keras_bert, "__all__", dir(keras_bert))
        if _public(name) and isinstance(getattr(keras_bert, name), type)
    ]
    missing = sorted(
        name for name in classes if name not in tested and name not in SKIPPED
    )
    assert not missing, f"public classes without a `>>>` example: {missing}"


@pytest.mark.parametrize("test", DOCTESTS, ids=lambda test: test.name)
def test_docstring_example(test):
    if test.name in SKIPPED:
        pytest.skip(SKIPPED[test.name])
    keras.utils.set_random_seed(0)
    runner = doctest.DocTestRunner(optionflags=OPTIONS)
    output = []
    failed = runner.run(test, out=output.append).failed
    keras.backend.clear_session()
    assert not failed, f"{test.name} ({test.filename}):\n" + "".join(output)
