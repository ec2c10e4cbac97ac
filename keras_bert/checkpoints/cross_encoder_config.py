"""The score activation of a sentence-transformers cross-encoder.

sentence-transformers' `CrossEncoder` turns a one-label model's logit into
its score with the activation named in `config.json`
(`sentence_transformers.activation_fn`, or `sbert_ce_default_activation_function`
before its v4), and with a sigmoid when none is named.
`BertCrossEncoder.from_preset` follows the same rule, so its scores are
the ones a user of that library sees.
"""

import logging
import os

from keras_bert.checkpoints import checkpoint_files as files

logger = logging.getLogger("keras_bert.checkpoints")

# sentence-transformers' class paths -> BertCrossEncoder score_activation.
_ACTIVATIONS = {
    "torch.nn.modules.activation.Sigmoid": "sigmoid",
    "torch.nn.modules.linear.Identity": "linear",
}


def cross_encoder_activation(directory):
    """"sigmoid" or "linear" for a Hugging Face directory, None for other
    layouts (a keras_bert preset stores its own)."""
    config_file = os.path.join(directory, "config.json")
    if files.detect_layout(directory) != files.HUGGINGFACE:
        return None
    config = files.read_json(config_file)
    named = (config.get("sentence_transformers") or {}).get(
        "activation_fn") or config.get("sbert_ce_default_activation_function")
    if named is None:
        return "sigmoid"
    if named not in _ACTIVATIONS:
        logger.warning("%s names the score activation %r, which keras_bert "
                       "does not know; it applies a sigmoid, as "
                       "sentence-transformers does for a one-label model.",
                       config_file, named)
        return "sigmoid"
    return _ACTIVATIONS[named]
