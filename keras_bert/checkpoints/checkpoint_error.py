import contextlib


class CheckpointError(ValueError):
    """A checkpoint directory or file that keras_bert cannot load as asked.

    The message names the file, key or shape at fault and what to do. It
    subclasses `ValueError`, so `except ValueError` also catches it.

    Example:
    >>> try:
    ...     raise CheckpointError("model.safetensors is truncated")
    ... except ValueError as error:
    ...     print(error)
    model.safetensors is truncated
    """


# Keras wraps an error raised in `from_config` in a `TypeError` that quotes
# the whole config before the original message.
_KERAS_WRAPPER = "Exception encountered: "


def error_summary(error):
    """The message of `error` on one line (its type's name when empty)."""
    message = str(error)
    if _KERAS_WRAPPER in message:
        message = message.rsplit(_KERAS_WRAPPER, 1)[1]
    return " ".join(message.split()) or type(error).__name__


@contextlib.contextmanager
def naming_file(path):
    """Re-raises a failure inside the block as a `CheckpointError` that
    names `path` (a Keras, h5py or JSON error names no file).

    Example:
    >>> try:
    ...     with naming_file("preset/config.json"):
    ...         raise KeyError("class_name")
    ... except CheckpointError as error:
    ...     print(error)
    preset/config.json: KeyError: 'class_name'
    """
    try:
        yield
    except Exception as error:
        summary = error_summary(error)
        if isinstance(error, CheckpointError) and str(path) in summary:
            raise
        kind = "" if isinstance(error, ValueError) else (
            f"{type(error).__name__}: ")
        raise CheckpointError(f"{path}: {kind}{summary}") from error
