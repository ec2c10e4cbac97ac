"""Convert a Google or Hugging Face BERT checkpoint, and export it back.

    python examples/convert_checkpoints.py path/to/uncased_L-12_H-768_A-12 runs/convert
    python examples/convert_checkpoints.py path/to/bert-base-uncased runs/convert

Smoke run (a small Hugging Face directory, e.g. all-MiniLM-L6-v2):

    python examples/convert_checkpoints.py path/to/all-MiniLM-L6-v2 runs/convert

`SOURCE` is an original Google checkpoint folder (`bert_config.json`,
`vocab.txt`, `bert_model.ckpt.*`; https://github.com/google-research/bert)
or a Hugging Face folder (`config.json`, `vocab.txt`, `model.safetensors`;
e.g. `huggingface-cli download bert-base-uncased --local-dir ...`). The
script writes `OUTPUT/preset` (keras_bert, loads on every backend) and
`OUTPUT/huggingface` (loads with `transformers.BertModel.from_pretrained`),
then checks that all three give the same outputs on a sentence pair
(the third with `transformers`, when it is installed). The largest
differences go to `OUTPUT/metrics.json`; above 1e-3 the script exits with
an error.
"""

import argparse
import os

import numpy as np
from keras import ops

from example_utils import write_metrics
from keras_bert.checkpoints import detect_layout
from keras_bert.checkpoints import export_to_huggingface
from keras_bert.checkpoints import save_to_preset
from keras_bert.models import BertBackbone
from keras_bert.preprocessing import BertPreprocessor
from keras_bert.preprocessing import BertTokenizer

SENTENCE = ("The quick brown fox jumps over the lazy dog.",
            "It was not amused.")


def sequence_output(backbone, inputs):
    return ops.convert_to_numpy(backbone(inputs)["sequence_output"])


def transformers_output(hf_dir, inputs):
    """The same inputs through `transformers`, or None if not installed."""
    try:
        import torch
        import transformers
    except ImportError:
        return None
    model = transformers.BertModel.from_pretrained(hf_dir).eval()
    with torch.no_grad():
        output = model(
            input_ids=torch.tensor(inputs["token_ids"], dtype=torch.long),
            token_type_ids=torch.tensor(inputs["segment_ids"],
                                        dtype=torch.long),
            attention_mask=torch.tensor(inputs["padding_mask"],
                                        dtype=torch.long),
        )
    return output.last_hidden_state.numpy()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("source", help="Google or Hugging Face checkpoint dir")
    parser.add_argument("output", help="folder for preset/ and huggingface/")
    args = parser.parse_args()

    layout = detect_layout(args.source)
    backbone = BertBackbone.from_preset(args.source)
    tokenizer = BertTokenizer.from_preset(args.source)
    print(f"read a {layout} checkpoint: {backbone.num_layers} layers, "
          f"hidden {backbone.hidden_dim}, {backbone.count_params():,} "
          "parameters")
    preset_dir = os.path.join(args.output, "preset")
    hf_dir = os.path.join(args.output, "huggingface")
    save_to_preset(backbone, preset_dir, tokenizer=tokenizer)
    export_to_huggingface(backbone, hf_dir, tokenizer=tokenizer)

    # Small test checkpoints may have fewer than 32 positions.
    preprocessor = BertPreprocessor(
        tokenizer, sequence_length=min(32, backbone.max_sequence_length))
    inputs = {key: ops.convert_to_numpy(value) for key, value in
              preprocessor(([SENTENCE[0]], [SENTENCE[1]])).items()}
    reference = sequence_output(backbone, inputs)
    differences = {
        "preset_vs_source": float(np.abs(
            sequence_output(BertBackbone.from_preset(preset_dir), inputs)
            - reference).max()),
    }
    hf = transformers_output(hf_dir, inputs)
    if hf is not None:
        differences["transformers_vs_source"] = float(
            np.abs(hf - reference).max())
    write_metrics(args, {"layout": layout, "preset": preset_dir,
                         "huggingface": hf_dir,
                         "max_abs_difference": differences})
    if max(differences.values()) > 1e-3:
        raise SystemExit(f"Outputs differ after conversion: {differences}")


if __name__ == "__main__":
    main()
