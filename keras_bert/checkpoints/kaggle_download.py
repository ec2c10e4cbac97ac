"""keras-hub preset names and `kaggle://` handles -> a folder in kagglehub's
cache.

keras-hub publishes its BERT presets on Kaggle Models and names each in
its own registry (`keras_hub.models.BertBackbone.presets` and the task
classes' `presets`, a public attribute) with a versioned `kaggle://`
handle; keras_bert asks that registry, so a preset keras-hub adds is known
here too. `kagglehub` fetches the files into its cache (`KAGGLEHUB_CACHE`,
default `~/.cache/kagglehub`) and answers from it when they are there.
"""

import os

from keras_bert.checkpoints.checkpoint_error import CheckpointError

_PREFIX = "kaggle://"
# keras-hub classes whose presets are BERT checkpoints keras_bert reads.
_KERAS_HUB_CLASSES = ("BertBackbone", "BertTextClassifier")


def keras_hub_handle(name):
    """The `kaggle://` handle keras-hub gives preset `name`, or None."""
    try:
        import keras_hub
    except ImportError:
        return None
    for class_name in _KERAS_HUB_CLASSES:
        presets = getattr(getattr(keras_hub.models, class_name, None),
                          "presets", None) or {}
        handle = (presets.get(name) or {}).get("kaggle_handle")
        if handle:
            return handle
    return None


def _cache_folder():
    return os.environ.get("KAGGLEHUB_CACHE",
                          os.path.join("~", ".cache", "kagglehub"))


def download_from_kaggle(handle):
    """The local folder of Kaggle model `handle`, fetched when needed.

    Args:
        handle: str. `OWNER/MODEL/FRAMEWORK/VARIATION[/VERSION]`, with or
            without the `kaggle://` prefix.

    Returns:
        str. The folder in kagglehub's cache.
    """
    handle = handle[len(_PREFIX):] if handle.startswith(_PREFIX) else handle
    parts = handle.strip("/").split("/")
    if len(parts) not in (4, 5) or not all(parts):
        raise CheckpointError(
            f"'kaggle://{handle}' is not a Kaggle model handle "
            "(kaggle://OWNER/MODEL/FRAMEWORK/VARIATION[/VERSION]).")
    import kagglehub

    try:
        return kagglehub.model_download(handle)
    except Exception as error:  # noqa: BLE001 - any failure, one message
        raise CheckpointError(
            f"'kaggle://{handle}' could not be fetched by kagglehub and is "
            f"not in its cache ({_cache_folder()}): {type(error).__name__}: "
            f"{str(error).splitlines()[0] if str(error) else ''}. Check the "
            "connection (Kaggle credentials in KAGGLE_USERNAME/KAGGLE_KEY if"
            " the model needs them) and try again, or pass a local "
            "directory.") from error
