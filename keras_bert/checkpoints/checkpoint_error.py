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
