"""Draw which tokens attend to which, for a layer and head of a BERT.

    python examples/attention_map.py google-bert/bert-base-uncased \
        --text "The cat sat on the mat." --text-b "It was tired." \
        --layer 5 --head 3 --output attention.png

Smoke run (random tiny model; any WordPiece `vocab.txt`, e.g. the one
the pretrain_mlm_nsp.py smoke run writes):

    python examples/attention_map.py --config tiny \
        --vocabulary runs/pretrain_smoke/vocab.txt --all-heads \
        --output runs/attention_smoke/attention.png

`PRESET` is a checkpoint directory (Hugging Face, Google or keras_bert)
with its vocabulary. Without `--head` the picture is the mean over the
layer's heads; `--all-heads` draws one image per head
(`OUTPUT` with `_head{i}` before the extension). The pictures in
docs/guides/attention.md were drawn with this script and
sentence-transformers/all-MiniLM-L6-v2.
"""

import argparse
import os

from example_utils import load_backbone_and_tokenizer
from keras_bert.visualization import plot_attention


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("preset", nargs="?",
                        help="checkpoint directory or pretrained model name")
    parser.add_argument("--config", help="named size, random weights")
    parser.add_argument("--vocabulary", help="vocab.txt for --config")
    parser.add_argument("--text", default="The cat sat on the mat.")
    parser.add_argument("--text-b", default="It was tired, so it slept.")
    parser.add_argument("--layer", type=int, default=-1)
    parser.add_argument("--head", type=int)
    parser.add_argument("--all-heads", action="store_true")
    parser.add_argument("--output", default="attention.png")
    args = parser.parse_args()
    args.cased, args.seed = False, 0

    backbone, tokenizer = load_backbone_and_tokenizer(args)
    text = (args.text, args.text_b) if args.text_b else args.text
    directory = os.path.dirname(args.output)
    if directory:
        os.makedirs(directory, exist_ok=True)
    heads = range(backbone.num_heads) if args.all_heads else [args.head]
    stem, extension = os.path.splitext(args.output)
    for head in heads:
        path = f"{stem}_head{head}{extension}" if args.all_heads else (
            args.output)
        plot_attention(backbone, tokenizer, text, args.layer, head, path=path)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
