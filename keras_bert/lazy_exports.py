"""Package attributes imported on first use (PEP 562 `__getattr__`).

A package that re-exports names from its modules would import all of
them, and with them Keras or TensorFlow, as soon as any one module of it
is imported. The command line reads and checks its input files with the
data readers and resolves model names before any framework loads; with
lazy exports, `keras_bert.preprocessing.tasks.readers` costs the readers
alone and `keras_bert.checkpoints.preset_names` the resolver alone, while
`from keras_bert.preprocessing import BertTokenizer` works as before.
"""

import importlib


def lazy_exports(package, exports):
    """`(__getattr__, __dir__)` for `package`, importing each exported name
    from its module on first access (and a submodule on first access as
    an attribute).

    Args:
        package: str. The package's `__name__`.
        exports: dict. Exported name -> the module (relative to the
            package, e.g. "bert_tokenizer") that defines it.

    Example:
    >>> getattr_, dir_ = lazy_exports("json", {"dumps": "decoder"})
    >>> "dumps" in dir_()
    True
    """

    def __getattr__(name):
        if name not in exports:
            # A submodule, as `package.submodule` reaches one once imported.
            try:
                return importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as error:
                if error.name != f"{package}.{name}":
                    raise
            raise AttributeError(
                f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(f"{package}.{exports[name]}")
        value = getattr(module, name)
        setattr(importlib.import_module(package), name, value)
        return value

    def __dir__():
        return sorted(exports)

    return __getattr__, __dir__
