"""Fetching a BERT repository from the Hugging Face Hub into its cache.

`huggingface_hub` does the work, so its cache and its settings apply
(`HF_HOME`, `HF_HUB_CACHE`, `HF_HUB_OFFLINE`, `HF_TOKEN`, progress bars),
and a download that is cut off resumes on the next call, never leaving a
partial file where a loader would read it (files appear in a snapshot only
once complete). keras_bert adds three rules:

- Only what a BERT needs is fetched: first the small files (configs,
  vocabulary, tokenizer and sentence-transformers module files), then,
  once `config.json` has shown a BERT, one set of weights: safetensors
  before a keras preset's `.h5`, before Google's checkpoint, before a
  PyTorch pickle, which is fetched only with `allow_pickle=True` (as a
  local directory with only a pickle is refused).
- Both steps read the same commit: the revision is resolved once.
- Every failure is a `CheckpointError` that names the id and what to do.
"""

import os

from keras_bert.checkpoints import checkpoint_files as files
from keras_bert.checkpoints.checkpoint_error import CheckpointError
from keras_bert.checkpoints.weight_files import refuse_pickle

# Configs, vocabulary and tokenizer files, sentence-transformers modules
# (`1_Pooling/config.json`) and keras-hub preset files: small, and all a
# tokenizer or `load_weights=False` needs.
_SMALL_FILES = ["*config.json", "config_sentence_transformers.json",
                "modules.json", "*vocab.txt", "tokenizer.json",
                "special_tokens_map.json", "metadata.json",
                "preprocessor.json", "task.json", "assets/*"]
_PICKLES = ("pytorch_model.bin", "pytorch_model.bin.index.json")


def _weight_patterns(names, prefix, allow_pickle, source):
    """The patterns of the one set of weights to fetch, or [] for none."""
    def has(name):
        return prefix + name in names

    if has("model.safetensors"):
        return [prefix + "model.safetensors"]
    if has("model.safetensors.index.json"):
        return [prefix + "model.safetensors.index.json",
                prefix + "*.safetensors"]
    if "model.weights.h5" in names:
        return ["*.weights.h5"]
    if has("bert_model.ckpt.index"):
        return [prefix + "bert_model.ckpt.*"]
    pickles = [name for name in _PICKLES if has(name)]
    if pickles and not allow_pickle:
        refuse_pickle(source, pickles)
    if pickles:
        return [prefix + name for name in _PICKLES] + [
            prefix + "pytorch_model-*.bin"]
    return []


def _transformer_prefix(snapshot):
    """Where a sentence-transformers repository keeps its BERT ("" or
    "DIR/"); "" for any other repository."""
    modules_file = os.path.join(snapshot, "modules.json")
    if not os.path.isfile(modules_file):
        return ""
    modules = files.read_json(modules_file)
    for entry in modules if isinstance(modules, list) else []:
        if str(entry.get("type", "")).endswith("Transformer"):
            path = str(entry.get("path", "")).strip("/")
            if os.path.isabs(path) or ".." in path.split("/"):
                raise CheckpointError(
                    f"{modules_file}: the Transformer module's path "
                    f"{path!r} leads outside the repository.")
            return f"{path}/" if path else ""
    return ""


def _local_names(snapshot):
    names = set()
    for root, _, found in os.walk(snapshot):
        for name in found:
            names.add(os.path.relpath(os.path.join(root, name), snapshot)
                      .replace(os.sep, "/"))
    return names


def _fetch_hint(repo_id, revision=None):
    command = f"hf download {repo_id}" + (
        f" --revision {revision}" if revision else "")
    # `hf` is huggingface_hub's command from 0.34; `huggingface-cli` before.
    return (f"Fetch it where the Hub is reachable (`{command}`, or "
            "`huggingface-cli download` with an older huggingface_hub, or "
            "load it once without HF_HUB_OFFLINE), or pass a local "
            "directory.")


def _message(error, repo_id, revision, handle):
    """What went wrong, in words, for an error of `huggingface_hub`."""
    from huggingface_hub import constants
    # `huggingface_hub.utils` has the error classes in every release the
    # package allows (`huggingface_hub.errors` has some of them only later).
    from huggingface_hub import utils as errors

    where = f"{handle!r} (Hugging Face repository {repo_id})"
    if isinstance(error, errors.GatedRepoError):
        return (f"{where} is gated: accept its conditions at "
                f"https://huggingface.co/{repo_id} and log in "
                "(`hf auth login`, or set HF_TOKEN).")
    if isinstance(error, errors.RepositoryNotFoundError):
        return (f"{where} does not exist on the Hub, or it is private and "
                "no token with access was given (`hf auth login`, or set "
                "HF_TOKEN).")
    if isinstance(error, errors.RevisionNotFoundError):
        return f"{where} has no revision {revision!r} (branch, tag or commit)."
    cache = constants.HF_HUB_CACHE
    if isinstance(error, errors.LocalEntryNotFoundError):
        if constants.HF_HUB_OFFLINE:
            return (f"{where}"
                    + (f" at revision {revision!r}" if revision else "")
                    + f" is not in the Hugging Face cache ({cache}) and "
                    "downloads are off (HF_HUB_OFFLINE=1). "
                    + _fetch_hint(repo_id, revision))
        return (f"{where}: the Hub could not be reached and the model is not "
                f"in the Hugging Face cache ({cache}): {_first_line(error)}. "
                "Check the connection (and HF_ENDPOINT), then try again.")
    return (f"{where}: the download failed ({type(error).__name__}: "
            f"{_first_line(error)}). Run again to resume it; nothing "
            "partial is loaded.")


def _first_line(error):
    return (str(error).splitlines() or [""])[0].rstrip(".")


def _listing(api, repo_id, revision):
    """`(commit, file names)` from the Hub, or None when it is off or out
    of reach (the cache then answers)."""
    from huggingface_hub import utils as errors

    try:
        info = api.model_info(repo_id, revision=revision)
    except errors.HfHubHTTPError as error:
        # The Hub answered: a missing, gated or private repository or
        # revision is final; a server error leaves the cache to answer.
        status = getattr(error.response, "status_code", None)
        if isinstance(error, (errors.RepositoryNotFoundError,
                              errors.RevisionNotFoundError)) or (
                status is not None and status < 500):
            raise
        return None
    except Exception:  # noqa: BLE001 - offline or unreachable: the cache
        return None
    return info.sha, {sibling.rfilename for sibling in info.siblings or ()}


def _download(repo_id, revision, load_weights, allow_pickle, handle):
    import huggingface_hub

    api = huggingface_hub.HfApi()
    listing = _listing(api, repo_id, revision)
    # By the revision as asked, so the cache records which commit a branch
    # or tag names (refs/), for later offline calls.
    snapshot = huggingface_hub.snapshot_download(
        repo_id, revision=revision, allow_patterns=_SMALL_FILES)
    prefix = _transformer_prefix(snapshot)
    try:
        # Refuses another architecture before any weights are fetched.
        files.detect_layout(os.path.join(snapshot, prefix))
    except CheckpointError as error:
        raise CheckpointError(f"{handle!r}: {error}") from None
    if not load_weights:
        return snapshot
    commit = os.path.basename(snapshot)
    names = listing[1] if listing else _local_names(snapshot)
    source = f"{handle!r} ({repo_id} at commit {commit})"
    patterns = _weight_patterns(names, prefix, allow_pickle, source)
    if listing and patterns:
        huggingface_hub.snapshot_download(repo_id, revision=commit,
                                          allow_patterns=patterns)
    elif not patterns and not listing:
        raise CheckpointError(
            f"{source}: the Hugging Face cache holds its config but no "
            f"weights ({snapshot} has {', '.join(sorted(names))}). "
            + _fetch_hint(repo_id))
    return snapshot


def download_from_huggingface(candidates, revision=None, load_weights=True,
                              allow_pickle=False, handle=None):
    """The snapshot directory of a BERT repository, fetched when needed.

    Args:
        candidates: list of str. Repository ids to try in order, the first
            found wins (a legacy id's new and old names).
        revision: str or None. Branch, tag or commit (None: "main").
        load_weights: bool. Fetch the weights too.
        allow_pickle: bool. Fetch PyTorch pickle weights when a repository
            has no others.
        handle: str. The name as the user wrote it, for messages.

    Returns:
        str. The snapshot directory in the Hugging Face cache.
    """
    from huggingface_hub import utils as errors

    handle = handle or candidates[0]
    first_error = None
    for repo_id in candidates:
        try:
            return _download(repo_id, revision, load_weights, allow_pickle,
                             handle)
        except CheckpointError:
            raise
        except errors.LocalEntryNotFoundError as error:
            # Not cached under this name: the next candidate may be.
            first_error = first_error or (error, repo_id)
        except Exception as error:  # noqa: BLE001 - each kind is worded
            raise CheckpointError(
                _message(error, repo_id, revision, handle)) from error
    error, repo_id = first_error
    raise CheckpointError(_message(error, repo_id, revision, handle)) from error
