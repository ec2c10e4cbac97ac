"""Prints keras_bert vs `transformers` max-abs differences (docs figures).

    KERAS_BACKEND=jax python -m tests.checkpoints.measure_parity

all-MiniLM-L6-v2 (real weights) on padded sentence pairs; a random tiny
`BertForPreTraining` loaded from HF safetensors and from a Google-format TF
checkpoint (MLM and NSP logits); and a keras_bert model exported to HF.
"""

import os
import tempfile

import keras
import numpy as np

import keras_bert
from tests.checkpoints import reference_checkpoints as ref


def max_abs(a, b):
    return float(np.max(np.abs(keras.ops.convert_to_numpy(a) - b)))


def minilm():
    import transformers

    tokenizer = transformers.BertTokenizerFast.from_pretrained(ref.MINILM_DIR)
    encoded = tokenizer(
        ["A man is playing a guitar.", "Where is the café?", "Short."],
        ["He plays music on stage tonight.", "Naïve questions, 42!",
         "Much longer second segment with more words in it."],
        padding="longest", return_tensors="np")
    inputs = {"token_ids": encoded["input_ids"],
              "segment_ids": encoded["token_type_ids"],
              "padding_mask": encoded["attention_mask"]}
    expected = ref.huggingface_outputs(
        transformers.BertModel.from_pretrained(ref.MINILM_DIR).eval(), inputs)
    actual = keras_bert.BertBackbone.from_preset(ref.MINILM_DIR)(inputs)
    return {
        "minilm sequence_output": max_abs(actual["sequence_output"],
                                          expected["last_hidden_state"]),
        "minilm pooled_output": max_abs(actual["pooled_output"],
                                        expected["pooler_output"]),
    }


def pretraining(directory, reference, label):
    inputs = ref.tiny_inputs()
    expected = ref.huggingface_outputs(reference, inputs)
    actual = keras_bert.BertPretrainer.from_preset(directory)(inputs)
    return {
        f"{label} mlm_logits": max_abs(
            actual["mlm_logits"],
            ref.masked_logits(expected["prediction_logits"],
                              inputs["mask_positions"])),
        f"{label} nsp_logits": max_abs(actual["nsp_logits"],
                                       expected["seq_relationship_logits"]),
    }


def main():
    import transformers

    results = minilm()
    with tempfile.TemporaryDirectory() as scratch:
        hf_dir = os.path.join(scratch, "hf")
        reference = ref.make_huggingface("BertForPreTraining", hf_dir)
        results.update(pretraining(hf_dir, reference, "tiny HF"))

        google_dir = os.path.join(scratch, "google")
        os.makedirs(google_dir)
        config = transformers.BertConfig(**ref.TINY_CONFIG).to_dict()
        ref.write_google_checkpoint(
            ref.google_variables(reference.state_dict(),
                                 ref.TINY_CONFIG["num_hidden_layers"]),
            google_dir, config)
        results.update(pretraining(google_dir, reference, "tiny Google"))

        export_dir = os.path.join(scratch, "export")
        model = keras_bert.BertPretrainer.from_preset(hf_dir)
        keras_bert.checkpoints.export_to_huggingface(model, export_dir)
        exported = transformers.BertForPreTraining.from_pretrained(export_dir)
        results.update(pretraining(hf_dir, exported.eval(),
                                   "export->transformers"))
    print(f"backend: {keras.config.backend()}")
    for name, value in results.items():
        print(f"  {name:34s} {value:.2e}")


if __name__ == "__main__":
    main()
