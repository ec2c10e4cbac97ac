"""Finding checkpoint files, with errors that say what is wrong.

Four directory layouts are recognised (see `detect_layout`); the weights
of each are read by `weight_files`.
"""

import json
import os

from keras_bert.checkpoints.checkpoint_error import CheckpointError
from keras_bert.checkpoints.confined_paths import confined_path

HUGGINGFACE = "huggingface"
GOOGLE = "google"
KERAS_BERT = "keras_bert"
KERAS_HUB = "keras_hub"
# The layouts as messages name them.
LAYOUT_NAMES = {HUGGINGFACE: "Hugging Face", GOOGLE: "Google BERT",
                KERAS_BERT: "keras_bert", KERAS_HUB: "keras-hub"}
# keras-hub registers its classes under both packages ("keras_nlp" for
# presets saved before the rename).
KERAS_HUB_BACKBONES = ("keras_hub>BertBackbone", "keras_nlp>BertBackbone")

# How a tokenizer's config in a keras_bert preset's config.json names its
# vocabulary: the file `BertTokenizer.save_to_preset` writes beside it
# (`vocabulary_io.VOCABULARY_FILE`, not imported: its package imports
# TensorFlow, which `import keras_bert` keeps out under JAX and PyTorch).
PRESET_VOCABULARY = "vocab.txt"

EXPECTED_LAYOUTS = (
    "Expected one of these layouts:\n"
    "  Hugging Face: config.json (model_type 'bert'), model.safetensors "
    "(or model.safetensors.index.json + shards), vocab.txt, "
    "tokenizer_config.json\n"
    "  Google BERT: bert_config.json, bert_model.ckpt.index + "
    "bert_model.ckpt.data-*, vocab.txt\n"
    "  keras_bert preset: config.json (a Keras model config), "
    "model.weights.h5, vocab.txt, tokenizer_config.json, metadata.json\n"
    "  keras-hub BERT preset: config.json (registered_name "
    "'keras_hub>BertBackbone'), model.weights.h5, tokenizer.json, "
    "assets/tokenizer/vocabulary.txt, metadata.json"
)

_LFS_MAGIC = b"version https://git-lfs.github.com/spec/"


def read_json(filename):
    try:
        with open(filename, encoding="utf-8") as f:
            return json.load(f)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CheckpointError(f"{filename} is not valid JSON: {error}") from None
    except RecursionError:
        raise CheckpointError(
            f"{filename} is not a config keras_bert reads: its JSON is "
            "nested too deeply.") from None


def directory_listing(path, limit=20):
    """The file names in `path`, for an error message (the first `limit`
    of a larger directory, and how many more)."""
    files = sorted(os.listdir(path))
    if not files:
        return "(empty directory)"
    more = len(files) - limit
    return ", ".join(files[:limit]) + (f" and {more} more" if more > 0
                                       else "")


def is_keras_config(config):
    """True for a Keras serialized model (what `save_to_preset` writes)."""
    return isinstance(config.get("config"), dict) and "class_name" in config


def is_keras_hub_config(config):
    """True for a model serialized by keras-hub (or keras-nlp before it)."""
    return str(config.get("registered_name")).startswith(
        ("keras_hub>", "keras_nlp>")) or str(config.get("module")).startswith(
        ("keras_hub.", "keras_nlp."))


def _check_keras_hub_bert(config, config_file):
    registered_name = config.get("registered_name")
    if registered_name not in KERAS_HUB_BACKBONES:
        raise CheckpointError(
            f"{config_file} describes registered_name {registered_name!r} "
            f"(class_name {config.get('class_name')!r}); keras_bert loads "
            "keras-hub's 'keras_hub>BertBackbone' only."
        )
    if config.get("class_name") != "BertBackbone":
        raise CheckpointError(
            f"{config_file} describes class_name {config.get('class_name')!r}"
            f" with registered_name {registered_name!r}; a keras-hub BERT "
            "preset has class_name 'BertBackbone'."
        )


def detect_layout(path):
    """Returns "huggingface", "google", "keras_bert" or "keras_hub".

    Only config files are inspected here; weight files are checked when
    they are read, so `load_weights=False` needs no weights. A keras-hub
    preset of another architecture is refused here.
    """
    if not os.path.exists(path):
        raise CheckpointError(f"{path} does not exist. {EXPECTED_LAYOUTS}")
    if not os.path.isdir(path):
        raise CheckpointError(
            f"{path} is a file; pass the checkpoint directory that holds "
            f"it. {EXPECTED_LAYOUTS}"
        )
    config_file = os.path.join(path, "config.json")
    if os.path.isfile(config_file):
        check_not_lfs_pointer(config_file)
        config = read_json(config_file)
        if is_keras_config(config) and is_keras_hub_config(config):
            _check_keras_hub_bert(config, config_file)
            return KERAS_HUB
        if is_keras_config(config):
            return KERAS_BERT
        model_type = config.get("model_type")
        if model_type == "bert" or (
            model_type is None and "num_hidden_layers" in config
        ):
            return HUGGINGFACE
        if model_type is not None:
            raise CheckpointError(
                f"{config_file} describes model_type {model_type!r}; "
                "keras_bert loads model_type 'bert' only."
            )
    if os.path.isfile(os.path.join(path, "bert_config.json")):
        return GOOGLE
    raise CheckpointError(
        f"{path} is not a checkpoint directory keras_bert recognises. "
        f"Found: {directory_listing(path)}.\n{EXPECTED_LAYOUTS}"
    )


def check_not_lfs_pointer(filename):
    """Raises when `filename` is a Git LFS pointer instead of the file."""
    with open(filename, "rb") as f:
        head = f.read(len(_LFS_MAGIC))
    if head == _LFS_MAGIC:
        raise CheckpointError(
            f"{filename} is a Git LFS pointer ({os.path.getsize(filename)} "
            "bytes), not the file itself. Run `git lfs pull` in the "
            "repository it came from, or download the file directly."
        )


def preset_weights_file(path, kind):
    """`path`/model.weights.h5, or an error naming the files found.

    `kind` names the preset in the message (e.g. "keras-hub preset").
    """
    weights_file = os.path.join(path, "model.weights.h5")
    if not os.path.isfile(weights_file):
        raise CheckpointError(
            f"{path} is a {kind} without model.weights.h5. Found: "
            f"{directory_listing(path)}. Pass load_weights=False for the "
            "architecture only."
        )
    check_not_lfs_pointer(weights_file)
    return weights_file


def map_vocabularies(config, function):
    """A copy of the serialized `config` with each "vocabulary" value
    replaced by `function(value)`, at any depth.

    Keras serializes a tokenizer with its whole vocabulary (half a megabyte
    of config.json for BERT base); a preset writes the vocabulary once, as
    `vocab.txt`, and its config names that file (`save_to_preset`), which
    `inline_vocabularies` turns back into the list of tokens.
    """
    if isinstance(config, list):
        return [map_vocabularies(item, function) for item in config]
    if not isinstance(config, dict):
        return config
    return {key: function(value) if key == "vocabulary"
            else map_vocabularies(value, function)
            for key, value in config.items()}


def inline_vocabularies(config, directory, source):
    """A preset's serialized `config` with every vocabulary it names as a
    file (`"vocab.txt"`) replaced by that file's tokens.

    The file must lie inside `directory` (`confined_path`), so a config
    cannot make the tokenizer, or any layer with a "vocabulary", read
    another file of the machine; what is built from the config then holds
    no path at all (`BertTokenizer.from_config` refuses one).
    """
    def tokens(value):
        if not isinstance(value, (str, os.PathLike)):
            return value
        path = confined_path(directory, value, f"{source} (vocabulary)")
        # TensorFlow's package: only a preset with a tokenizer gets here,
        # and the tokenizer needs TensorFlow anyway.
        from keras_bert.preprocessing.vocabulary_io import load_vocabulary

        return load_vocabulary(path)

    return map_vocabularies(config, tokens)
