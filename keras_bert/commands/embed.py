"""`keras-bert embed`: one vector per text of a file, written as `.npy`.

    keras-bert embed sentences.txt --model path/to/all-MiniLM-L6-v2
    keras-bert embed data.tsv --column sentence --model DIR --output idx.npy

FILE holds one text a line (blank lines skipped), or is a TSV/CSV/JSONL
file whose `--column` holds the texts. `--model` is a sentence-transformers
directory, a Hugging Face / Google BERT directory (mean pooling) or a
keras_bert preset of a `BertTextEmbedder`. Writes OUTPUT (default: FILE
with `.npy`), a float32 array `(texts, dim)` in file order, and next to it
OUTPUT with `.json`: the model directory and the texts, which is what
`keras-bert search OUTPUT "query"` reads.
"""

import json
import os

from keras_bert.commands.input_files import require_files
from keras_bert.commands.model_argument import resolve_model
from keras_bert.commands.precision_argument import add_precision_argument
from keras_bert.commands.precision_argument import apply_precision
from keras_bert.commands.precision_argument import load_overrides

TABLE_EXTENSIONS = (".tsv", ".csv", ".jsonl")


def add_parser(subparsers):
    parser = subparsers.add_parser(
        "embed", help="embed every text of a file into a .npy of vectors",
        description=__doc__.split("\n\n", 2)[2])
    parser.add_argument("file", metavar="FILE", help="texts: a text file "
                        "(one a line) or a TSV/CSV/JSONL file")
    parser.add_argument("--model", required=True, metavar="DIR_OR_NAME",
                        help="sentence-transformers, BERT or keras_bert "
                        "directory, or a name (e.g. "
                        "sentence-transformers/all-MiniLM-L6-v2)")
    parser.add_argument("--output", metavar="OUTPUT",
                        help="the .npy to write (default: FILE.npy)")
    parser.add_argument("--column", default="sentence",
                        help="text column of a table (default: sentence)")
    parser.add_argument("--batch-size", type=int, metavar="N",
                        help="texts per model call (default: "
                        "BertTextEmbedder.encode's, 64)")
    parser.add_argument("--sequence-length", type=int, metavar="N",
                        help="longest input in tokens (default: the model's)")
    add_precision_argument(parser)
    parser.set_defaults(func=run)


def read_texts(path, column="sentence"):
    """The texts of a file: a column of a table, else its non-blank lines."""
    require_files([path])
    if path.endswith(TABLE_EXTENSIONS):
        from keras_bert.preprocessing.tasks import read_table

        return read_table(path, [column])["texts"][0]
    with open(path, encoding="utf-8") as file:
        return [line.strip() for line in file if line.strip()]


def index_paths(path):
    """`(vectors .npy, metadata .json)` of an index named by either."""
    stem = os.path.splitext(path)[0] if path.endswith((".npy", ".json")) else (
        path)
    return stem + ".npy", stem + ".json"


def load_embedder(model, sequence_length=None, precision="float32"):
    """The `BertTextEmbedder` of `--model` (a directory or a name)."""
    model_dir = resolve_model(model)

    from keras_bert.models.bert_text_embedder import BertTextEmbedder

    kwargs = {"sequence_length": sequence_length} if sequence_length else {}
    model = apply_precision(BertTextEmbedder.from_preset(
        model_dir, **kwargs, **load_overrides(precision)), precision)
    if model.preprocessor is None:
        raise ValueError(f"{model_dir} has no vocabulary (vocab.txt), so its "
                         "texts cannot be tokenized.")
    return model


def run(args):
    import numpy as np

    texts = read_texts(args.file, args.column)
    if not texts:
        raise ValueError(f"{args.file} holds no text.")
    model = load_embedder(args.model, args.sequence_length, args.precision)
    batch = ({} if args.batch_size is None
             else {"batch_size": args.batch_size})
    vectors = model.encode(texts, verbose=1, **batch)
    vectors_path, metadata_path = index_paths(
        args.output or os.path.splitext(args.file)[0] + ".npy")
    np.save(vectors_path, vectors)
    with open(metadata_path, "w", encoding="utf-8") as file:
        # A directory by its absolute path, a model's name as it is.
        json.dump({"model": (os.path.abspath(args.model) if os.path.isdir(
                       args.model) else args.model),
                   "source": os.path.abspath(args.file),
                   "sequence_length": model.preprocessor.sequence_length,
                   "precision": args.precision,
                   "texts": texts}, file)
    print(f"Wrote {vectors.shape[0]} vectors of {vectors.shape[1]} values to "
          f"{vectors_path} (texts and model: {metadata_path}).")
    return 0
