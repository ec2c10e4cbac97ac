"""Reading and writing WordPiece vocabularies and tokenizer presets.

A tokenizer preset is a directory. `read_tokenizer_preset` understands:

* keras_bert's own presets and Hugging Face model directories: `vocab.txt`
  plus `tokenizer_config.json` (keys `do_lower_case`, `strip_accents`,
  `tokenize_chinese_chars`, `model_max_length` and the special tokens);
* Hugging Face directories with only `tokenizer.json` (the vocabulary and the
  `BertNormalizer` settings are read from it);
* original Google BERT checkpoint directories (`vocab.txt` only): the casing
  is inferred from the vocabulary (see `infer_lowercase`) and
  `model_max_length` from `bert_config.json`/`config.json`
  (`max_position_embeddings`);
* keras-hub BERT presets: `assets/tokenizer/vocabulary.txt`, with the
  settings read from `tokenizer.json`, which there is the Keras-serialized
  keras-hub `BertTokenizer` (told apart from Hugging Face's file by its
  `class_name`/`config` keys), and `model_max_length` from `config.json`'s
  `max_sequence_length`.
"""

import json
import os

VOCABULARY_FILE = "vocab.txt"
CONFIG_FILE = "tokenizer_config.json"
SPECIAL_TOKEN_ARGS = ("unknown_token", "pad_token", "cls_token", "sep_token",
                      "mask_token")
# keras_bert argument name -> Hugging Face tokenizer_config.json key.
_HF_SPECIAL_KEYS = {"unknown_token": "unk_token", "pad_token": "pad_token",
                    "cls_token": "cls_token", "sep_token": "sep_token",
                    "mask_token": "mask_token"}
# HF writes a huge sentinel (int(1e30)) when the maximum length is unknown.
_UNKNOWN_MAX_LENGTH = 10**9
KERAS_HUB_VOCABULARY_FILE = os.path.join("assets", "tokenizer",
                                         "vocabulary.txt")
_KERAS_HUB_TOKENIZERS = ("keras_hub>BertTokenizer", "keras_nlp>BertTokenizer")


def load_vocabulary(vocabulary):
    """Returns the vocabulary as a validated list of tokens.

    Args:
        vocabulary: a path to a one-token-per-line file, or a list of tokens.
    """
    source = "the vocabulary list"
    if isinstance(vocabulary, (str, os.PathLike)):
        path = os.fspath(vocabulary)
        if not os.path.isfile(path):
            raise FileNotFoundError(
                f"Vocabulary file not found: '{path}'. Pass the path of a "
                "vocab.txt (one token per line) or a list of tokens."
            )
        with open(path, encoding="utf-8") as f:
            tokens = [line.rstrip("\r\n") for line in f]
        source = f"'{path}'"
    elif isinstance(vocabulary, (list, tuple)):
        tokens = list(vocabulary)
    else:
        raise TypeError(
            "`vocabulary` must be a path to vocab.txt or a list of tokens; "
            f"got {type(vocabulary).__name__}."
        )
    if not tokens:
        raise ValueError(f"The vocabulary in {source} is empty.")
    seen = {}
    for index, token in enumerate(tokens):
        if not isinstance(token, str) or not token:
            raise ValueError(
                f"Entry {index} (line {index + 1}) of {source} is "
                f"{token!r}; every token must be a non-empty string."
            )
        if token in seen:
            raise ValueError(
                f"Token {token!r} appears twice in {source} (entries "
                f"{seen[token]} and {index}); remove the duplicate."
            )
        seen[token] = index
    return tokens


def infer_lowercase(tokens):
    """Guesses whether a vocabulary is uncased.

    Uncased vocabularies were built from lowercased text, so (leaving out
    bracketed special tokens) almost no token contains an uppercase letter:
    the uncased BERT vocabulary has 2 of 30,522 ("ℝ", "##ℝ"), the cased one
    thousands. Fewer than 1% is taken as uncased.
    """
    words = [t for t in tokens if not (t.startswith("[") and t.endswith("]"))]
    upper = sum(any(c.isupper() for c in t) for t in words)
    return upper < 0.01 * max(len(words), 1)


def _read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except json.JSONDecodeError as e:
        raise ValueError(f"'{path}' is not valid JSON: {e}") from e


def _token_content(value):
    # HF stores special tokens either as strings or as AddedToken dicts.
    return value.get("content") if isinstance(value, dict) else value


def _max_length(value):
    if isinstance(value, (int, float)) and 0 < value < _UNKNOWN_MAX_LENGTH:
        return int(value)
    return None


def _is_keras_config(config):
    return isinstance(config.get("config"), dict) and "class_name" in config


def _keras_hub_tokenizer(directory, config, source):
    """`BertTokenizer` arguments from a keras-hub preset's tokenizer.json."""
    name = config.get("registered_name")
    if name not in _KERAS_HUB_TOKENIZERS:
        raise ValueError(
            f"'{source}' describes registered_name {name!r} (class_name "
            f"{config.get('class_name')!r}); keras_bert reads keras-hub's "
            "'keras_hub>BertTokenizer' only."
        )
    settings = config["config"]
    fixed = {"split": True, "suffix_indicator": "##"}
    for key, supported in fixed.items():
        if settings.get(key, supported) != supported:
            raise ValueError(
                f"'{source}': {key}={settings[key]!r} is not supported by "
                f"keras_bert's BertTokenizer (only {supported!r})."
            )
    vocabulary = settings.get("vocabulary")
    if not isinstance(vocabulary, (list, tuple)):
        vocabulary = os.path.join(directory, KERAS_HUB_VOCABULARY_FILE)
    kwargs = {
        "vocabulary": load_vocabulary(vocabulary),
        # keras-hub's defaults, for configs that leave a field out.
        "lowercase": bool(settings.get("lowercase", False)),
        "strip_accents": bool(settings.get("strip_accents", False)),
        "split_cjk": bool(settings.get("split_on_cjk", True)),
        "unknown_token": settings.get("oov_token", "[UNK]"),
        "special_tokens_in_strings": bool(
            settings.get("special_tokens_in_strings", False)),
    }
    backbone_path = os.path.join(directory, "config.json")
    if os.path.isfile(backbone_path):
        backbone = _read_json(backbone_path).get("config") or {}
        kwargs["model_max_length"] = _max_length(
            backbone.get("max_sequence_length"))
    return kwargs


def has_vocabulary(directory):
    """True when `directory` holds a vocabulary `read_tokenizer_preset` reads.

    Task presets use this to decide whether to attach a preprocessor; it
    reads file names only (plus `tokenizer.json`'s model type, or its class
    in a keras-hub preset), so it is cheap and never raises for a readable
    directory.
    """
    directory = os.fspath(directory)
    if os.path.isfile(os.path.join(directory, VOCABULARY_FILE)):
        return True
    hf_json_path = os.path.join(directory, "tokenizer.json")
    if not os.path.isfile(hf_json_path):
        return False
    try:
        hf_json = _read_json(hf_json_path)
    except (ValueError, UnicodeDecodeError):
        return False
    if _is_keras_config(hf_json):
        inline = isinstance(hf_json["config"].get("vocabulary"), list)
        return hf_json.get("registered_name") in _KERAS_HUB_TOKENIZERS and (
            inline or os.path.isfile(os.path.join(directory,
                                                  KERAS_HUB_VOCABULARY_FILE)))
    return (hf_json.get("model") or {}).get("type") == "WordPiece"


def read_tokenizer_preset(directory):
    """Returns `BertTokenizer` constructor arguments read from `directory`."""
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        raise FileNotFoundError(
            f"Preset directory not found: '{directory}'. Expected a folder "
            f"with {VOCABULARY_FILE} (and optionally {CONFIG_FILE})."
        )
    vocab_path = os.path.join(directory, VOCABULARY_FILE)
    hf_json_path = os.path.join(directory, "tokenizer.json")
    config_path = os.path.join(directory, CONFIG_FILE)
    hf_json = _read_json(hf_json_path) if os.path.isfile(hf_json_path) else {}
    if _is_keras_config(hf_json):
        return _keras_hub_tokenizer(directory, hf_json, hf_json_path)
    if os.path.isfile(vocab_path):
        kwargs = {"vocabulary": load_vocabulary(vocab_path)}
    elif (hf_json.get("model") or {}).get("type") == "WordPiece":
        vocab = hf_json["model"]["vocab"]
        kwargs = {"vocabulary": sorted(vocab, key=vocab.get)}
    else:
        raise FileNotFoundError(
            f"No {VOCABULARY_FILE} (nor a WordPiece tokenizer.json) in "
            f"'{directory}'; found {sorted(os.listdir(directory))}."
        )
    if os.path.isfile(config_path):
        config = _read_json(config_path)
        kwargs["lowercase"] = bool(config.get("do_lower_case", True))
        kwargs["strip_accents"] = config.get("strip_accents")
        kwargs["split_cjk"] = bool(config.get("tokenize_chinese_chars", True))
        kwargs["model_max_length"] = _max_length(config.get("model_max_length"))
        for arg, key in _HF_SPECIAL_KEYS.items():
            if config.get(key) is not None:
                kwargs[arg] = _token_content(config[key])
    elif hf_json.get("normalizer", {}).get("type") == "BertNormalizer":
        normalizer = hf_json["normalizer"]
        kwargs["lowercase"] = bool(normalizer.get("lowercase", True))
        kwargs["strip_accents"] = normalizer.get("strip_accents")
        kwargs["split_cjk"] = bool(normalizer.get("handle_chinese_chars", True))
    else:
        kwargs["lowercase"] = infer_lowercase(kwargs["vocabulary"])
    if kwargs.get("model_max_length") is None:
        for name in ("bert_config.json", "config.json"):
            path = os.path.join(directory, name)
            if os.path.isfile(path):
                length = _read_json(path).get("max_position_embeddings")
                kwargs["model_max_length"] = _max_length(length)
                break
    return kwargs


def write_tokenizer_preset(directory, tokenizer):
    """Writes `vocab.txt` and a HF-compatible `tokenizer_config.json`."""
    directory = os.fspath(directory)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, VOCABULARY_FILE), "w",
              encoding="utf-8") as f:
        f.write("".join(token + "\n" for token in tokenizer.get_vocabulary()))
    config = {
        "tokenizer_class": "BertTokenizer",
        "do_lower_case": tokenizer.lowercase,
        "strip_accents": tokenizer.strip_accents,
        "tokenize_chinese_chars": tokenizer.split_cjk,
    }
    if tokenizer.model_max_length is not None:
        config["model_max_length"] = tokenizer.model_max_length
    for arg, key in _HF_SPECIAL_KEYS.items():
        config[key] = getattr(tokenizer, arg)
    with open(os.path.join(directory, CONFIG_FILE), "w",
              encoding="utf-8") as f:
        json.dump(config, f, indent=2, ensure_ascii=False)
        f.write("\n")
