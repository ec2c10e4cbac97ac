"""Pretrained models by name: `from_preset`'s names -> a local directory.

Every `from_preset` (and every CLI `--model`) passes its argument through
`resolve_preset`, which returns a directory the loaders read:

- a local directory: itself;
- `hf://ORG/NAME`, `hf://ORG/NAME@REVISION`, a bare Hugging Face id
  `ORG/NAME[@REVISION]`, or a legacy id such as `bert-base-uncased` (the
  Hub redirects those to `google-bert/bert-base-uncased`): the snapshot in
  the Hugging Face cache, fetched through `huggingface_hub` when missing
  (`huggingface_hub_download`);
- `kaggle://OWNER/MODEL/FRAMEWORK/VARIATION[/VERSION]` or a keras-hub
  preset name (`bert_base_en_uncased`, looked up in keras-hub's own
  registry): the folder `kagglehub` keeps in its cache (`kaggle_download`).

The named sizes (`tiny`, `bert_base_uncased_config`, ...) are not
resolved here: they are architectures without weights, which only
`BertBackbone.from_preset` builds.
"""

import os
import re

from keras_bert.checkpoints.checkpoint_error import CheckpointError
from keras_bert.checkpoints.huggingface_hub_download import (
    download_from_huggingface,
)
from keras_bert.checkpoints.kaggle_download import download_from_kaggle
from keras_bert.checkpoints.kaggle_download import keras_hub_handle

HF_PREFIX = "hf://"
KAGGLE_PREFIX = "kaggle://"

# Ids of the first BERT uploads, before the Hub gave every model an
# organization; the Hub redirects each to its new home.
LEGACY_IDS = {
    **{name: f"google-bert/{name}" for name in (
        "bert-base-uncased", "bert-base-cased", "bert-large-uncased",
        "bert-large-cased", "bert-base-multilingual-uncased",
        "bert-base-multilingual-cased", "bert-base-chinese",
        "bert-base-german-cased", "bert-large-uncased-whole-word-masking",
        "bert-large-cased-whole-word-masking",
        "bert-large-uncased-whole-word-masking-finetuned-squad",
        "bert-large-cased-whole-word-masking-finetuned-squad",
        "bert-base-cased-finetuned-mrpc")},
    "bert-base-german-dbmdz-cased": "dbmdz/bert-base-german-cased",
    "bert-base-german-dbmdz-uncased": "dbmdz/bert-base-german-uncased",
}
# The Hub's rule for repository ids: letters, digits, "-", "_", "." in
# one or two parts, not starting or ending with "-" or ".".
_PART = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?"
_HF_ID = re.compile(rf"(?:{_PART}/)?{_PART}")
# keras-hub preset names are lower case with underscores (and dots, as in
# "bge_base_v1.5_en"); Hugging Face ids of that shape would need an
# organization, so the two spellings do not overlap.
_KERAS_HUB_NAME = re.compile(r"[a-z0-9][a-z0-9_.]*_[a-z0-9_.]*")


def _split_revision(name):
    repo_id, _, revision = name.partition("@")
    return repo_id, revision or None


def _looks_like_path(name):
    """A name a user meant as a path: it cannot be a Hub id."""
    return (name.startswith(("/", "./", "../", "~")) or name.count("/") > 1
            or os.sep != "/" and os.sep in name)


def _not_found(name, sizes_hint):
    return CheckpointError(
        f"{name!r}: no such directory, and not a model name keras_bert "
        "knows. Pass a checkpoint directory, a Hugging Face id "
        "('google-bert/bert-base-uncased', 'hf://ORG/NAME@REVISION'), a "
        "keras-hub preset name ('bert_base_en_uncased') or a kaggle:// "
        f"handle{sizes_hint}.")


def resolve_preset(preset, load_weights=True, allow_pickle=False,
                   sizes_hint=""):
    """The local directory that holds `preset`, fetching it when needed.

    Args:
        preset: str or path. A directory, a Hugging Face id or `hf://`
            handle, a keras-hub preset name or a `kaggle://` handle.
        load_weights: bool. Fetch the weight files too (False: only the
            config and tokenizer files).
        allow_pickle: bool. Whether a Hub repository whose only weights
            are a PyTorch pickle may be fetched (see `from_preset`).
        sizes_hint: str. Appended to the "not found" message (the caller's
            other accepted names).

    Returns:
        str. A directory in one of the layouts `detect_layout` reads.

    Raises:
        CheckpointError: the name names nothing, is not cached while the
            Hub is offline, the repository is missing, gated or private,
            the revision does not exist, the model is not a BERT, or the
            download failed. The message names the id and what to do.

    Example:
    >>> resolve_preset("/no/such/dir")
    Traceback (most recent call last):
    ...
    keras_bert.checkpoints.checkpoint_error.CheckpointError: '/no/such/dir': no such directory, ...
    """
    name = os.fspath(preset)
    if not isinstance(name, str):
        raise TypeError(f"from_preset takes a str or path; got {preset!r}.")
    if os.path.isdir(name):
        return name
    if os.path.exists(name):
        raise CheckpointError(
            f"{name} is a file; pass the checkpoint directory that holds it.")
    if name.startswith(HF_PREFIX):
        return _from_huggingface(name[len(HF_PREFIX):], load_weights,
                                 allow_pickle, handle=name)
    if name.startswith(KAGGLE_PREFIX):
        return download_from_kaggle(name[len(KAGGLE_PREFIX):])
    if _looks_like_path(name):
        raise _not_found(name, sizes_hint)
    if _KERAS_HUB_NAME.fullmatch(name):
        handle = keras_hub_handle(name)
        if handle is not None:
            return download_from_kaggle(handle)
        # Not keras-hub's: a mistyped name (or size), not a Hub id.
        raise _not_found(name, sizes_hint)
    if _HF_ID.fullmatch(_split_revision(name)[0]):
        return _from_huggingface(name, load_weights, allow_pickle, name)
    raise _not_found(name, sizes_hint)


def _from_huggingface(spec, load_weights, allow_pickle, handle):
    repo_id, revision = _split_revision(spec)
    if not _HF_ID.fullmatch(repo_id):
        raise CheckpointError(
            f"{handle!r} is not a Hugging Face repository id (ORG/NAME, "
            "optionally @REVISION).")
    # A legacy id's files may sit in the cache under the new id or, when
    # fetched by the old one, under the old; the new one is tried first.
    candidates = [LEGACY_IDS[repo_id], repo_id] if repo_id in LEGACY_IDS else [
        repo_id]
    return download_from_huggingface(
        candidates, revision, load_weights=load_weights,
        allow_pickle=allow_pickle, handle=handle)
