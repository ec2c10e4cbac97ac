"""Bring HF and Google weight names to one canonical naming.

The canonical names are those of a Hugging Face `BertModel` without the
`bert.` prefix (`embeddings.word_embeddings.weight`,
`encoder.layer.0.attention.self.query.weight`, ...) plus the head names
(`cls.predictions.*`, `cls.seq_relationship.*`, `classifier.*`,
`qa_outputs.*`), with tensors in PyTorch `nn.Linear` layout `(out, in)`.
`weight_conversion` maps those to keras_bert variables, so there is one
converter for both sources. Each function also returns `origins`, the
canonical name -> name in the file, so errors quote the file's own names.
"""

import logging
import re

import numpy as np

logger = logging.getLogger("keras_bert.checkpoints")

# Registered buffers some HF checkpoints contain; they are not weights.
_HF_BUFFERS = ("embeddings.position_ids",)

# Google variables whose names do not follow the generic rule. The
# `output_weights` are stored `(num_outputs, hidden)`, already the
# `nn.Linear` layout, unlike `kernel`s. The last four come from Google's
# fine-tuning scripts (run_classifier.py, run_squad.py).
_GOOGLE_SPECIAL = {
    "cls/predictions/output_bias": "cls.predictions.bias",
    "cls/seq_relationship/output_weights": "cls.seq_relationship.weight",
    "cls/seq_relationship/output_bias": "cls.seq_relationship.bias",
    "output_weights": "classifier.weight",
    "output_bias": "classifier.bias",
    "cls/squad/output_weights": "qa_outputs.weight",
    "cls/squad/output_bias": "qa_outputs.bias",
}
# Optimizer and loop state saved by Google's training scripts.
_GOOGLE_TRAINING_STATE = re.compile(
    r"(^|/)(adam_m|adam_v|global_step|good_steps|current_loss_scale)$"
)


def normalize_huggingface_names(tensors):
    """Canonical names for a HF state dict (`bert.` prefix optional).

    Old checkpoints name LayerNorm parameters `gamma`/`beta`; the MLM
    decoder matrix, when stored, must equal the word embeddings (keras_bert
    ties them) and is then dropped; an untied one stays and is reported as
    unexpected.
    """
    state, origins = {}, {}
    for name, value in tensors.items():
        key = name[len("bert."):] if name.startswith("bert.") else name
        key = re.sub(r"LayerNorm\.gamma$", "LayerNorm.weight", key)
        key = re.sub(r"LayerNorm\.beta$", "LayerNorm.bias", key)
        if key in _HF_BUFFERS:
            continue
        state[key], origins[key] = value, name

    decoder = state.get("cls.predictions.decoder.weight")
    embeddings = state.get("embeddings.word_embeddings.weight")
    if decoder is not None and embeddings is not None:
        if np.array_equal(decoder, embeddings):
            del state["cls.predictions.decoder.weight"]
        else:
            logger.warning(
                "cls.predictions.decoder.weight differs from the word "
                "embeddings (an untied MLM decoder); keras_bert ties them."
            )
    decoder_bias = state.pop("cls.predictions.decoder.bias", None)
    if decoder_bias is not None:
        bias = state.setdefault("cls.predictions.bias", decoder_bias)
        if not np.array_equal(bias, decoder_bias):
            state["cls.predictions.decoder.bias"] = decoder_bias
    return state, origins


def _google_key(name, value):
    if name in _GOOGLE_SPECIAL:
        return _GOOGLE_SPECIAL[name], value
    parts = name.split("/")
    if parts[0] == "bert":
        parts = parts[1:]
    leaf = parts[-1]
    if leaf == "kernel":
        # TF dense kernels are (in, out); nn.Linear weights are (out, in).
        parts[-1], value = "weight", np.transpose(value)
    elif leaf == "gamma":
        parts[-1] = "weight"
    elif leaf == "beta":
        parts[-1] = "bias"
    elif leaf.endswith("_embeddings"):
        parts.append("weight")
    parts = [re.sub(r"^layer_(\d+)$", r"layer.\1", part) for part in parts]
    return ".".join(parts), value


def google_to_canonical_names(variables):
    """Canonical names for the variables of an original Google checkpoint.

    Optimizer slots (`adam_m`, `adam_v`) and `global_step` are skipped.
    """
    state, origins = {}, {}
    for name, value in variables.items():
        if _GOOGLE_TRAINING_STATE.search(name):
            continue
        key, value = _google_key(name, value)
        state[key], origins[key] = value, name
    return state, origins
