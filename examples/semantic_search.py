"""Sentence embeddings and semantic search with `BertTextEmbedder`.

    python examples/semantic_search.py ../shared/data/sst2/test.tsv \
        --preset sentence-transformers/all-MiniLM-L6-v2 \
        --query "a moving film about family" --query "boring and too long"

Smoke run (random tiny model, 32 sentences; any WordPiece `vocab.txt`):

    python examples/semantic_search.py ../shared/data/sst2/test.tsv \
        --config tiny --vocabulary path/to/vocab.txt \
        --max-examples 32 --output runs/search_smoke

Data: any UTF-8 file of sentences: one per line, or a TSV/CSV whose
`--column` (default `sentence`, as in GLUE SST-2) holds them. `--preset`
is a sentence-transformers directory (its pooling and normalization are
read from `modules.json`), or any BERT directory (mean pooling). Every
sentence becomes one vector, L2-normalized when the directory says so
(all-MiniLM-L6-v2 does; `BertTextEmbedder.encode`, several short
sentences to a row); a query's neighbours are the sentences with the
highest similarity. Nothing is trained. With `--output`, the
neighbours and their scores go to `OUTPUT/metrics.json`.
"""

import argparse

import numpy as np

from example_utils import add_model_arguments
from example_utils import first
from example_utils import load_backbone_and_tokenizer
from example_utils import write_metrics
from keras_bert import BertTextEmbedder
from keras_bert import BertTextEmbedderPreprocessor
from keras_bert.commands.embed import read_texts


def load_embedder(args):
    if args.preset:
        return BertTextEmbedder.from_preset(args.preset)
    backbone, tokenizer = load_backbone_and_tokenizer(args)
    return BertTextEmbedder(backbone, preprocessor=BertTextEmbedderPreprocessor(
        tokenizer, sequence_length=args.sequence_length))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpus", help="sentences: a text file or a TSV/CSV")
    parser.add_argument("--column", default="sentence")
    parser.add_argument("--query", action="append",
                        help="a search query (repeat for more)")
    parser.add_argument("--top-k", type=int, default=5)
    add_model_arguments(parser, batch_size=64)
    args = parser.parse_args()

    sentences = first(read_texts(args.corpus, args.column), args.max_examples)
    queries = args.query or ["a wonderful, moving film",
                             "boring and far too long"]
    embedder = load_embedder(args)
    corpus_vectors = embedder.encode(sentences, batch_size=args.batch_size)
    similarity = embedder.encode(queries) @ corpus_vectors.T
    results = {}
    for query, row in zip(queries, similarity):
        best = np.argsort(-row)[:args.top_k]
        results[query] = [
            {"score": round(float(row[i]), 4), "sentence": sentences[i]}
            for i in best
        ]
    write_metrics(args, {"sentences": len(sentences), "results": results})


if __name__ == "__main__":
    main()
