"""Sentence embeddings and semantic search with a frozen BERT backbone.

    python examples/semantic_search.py ../shared/data/sst2/test.tsv \
        --preset path/to/all-MiniLM-L6-v2 \
        --query "a moving film about family" --query "boring and too long"

Smoke run (random tiny model, 200 sentences; any WordPiece `vocab.txt`,
e.g. the one the pretrain_mlm_nsp.py smoke run writes):

    python examples/semantic_search.py ../shared/data/sst2/test.tsv \
        --config tiny --vocabulary runs/pretrain_smoke/vocab.txt \
        --max-examples 200 --output runs/search_smoke

Data: any UTF-8 file of sentences: one per line, or a TSV/CSV whose
`--column` (default `sentence`, as in GLUE SST-2) holds them. Each
sentence becomes the mean of the backbone's last-layer vectors over its
real tokens, L2-normalized (the pooling sentence-transformers checkpoints
such as all-MiniLM-L6-v2 are trained for); a query's neighbours are the
sentences with the highest cosine similarity. Nothing is trained: the
backbone is frozen (feature extraction). With `--output`, the neighbours
and their scores go to `OUTPUT/metrics.json`.
"""

import argparse

import numpy as np
from keras import ops

from example_utils import add_model_arguments
from example_utils import first
from example_utils import load_backbone_and_tokenizer
from example_utils import write_metrics
from keras_bert.preprocessing import BertPreprocessor
from keras_bert.preprocessing.tasks import read_table


def read_sentences(path, column):
    if path.endswith((".tsv", ".csv", ".jsonl")):
        return read_table(path, [column])["texts"][0]
    with open(path, encoding="utf-8") as file:
        return [line.strip() for line in file if line.strip()]


def embed(backbone, preprocessor, sentences, batch_size):
    """Mean-pooled, L2-normalized last-layer vectors, `(n, hidden_dim)`."""
    vectors = []
    for start in range(0, len(sentences), batch_size):
        inputs = preprocessor(sentences[start:start + batch_size])
        inputs = {k: ops.convert_to_numpy(v) for k, v in inputs.items()}
        sequence = ops.convert_to_numpy(
            backbone(inputs, training=False)["sequence_output"])
        mask = inputs["padding_mask"][..., None].astype("float32")
        mean = (sequence * mask).sum(axis=1) / mask.sum(axis=1)
        vectors.append(mean / np.linalg.norm(mean, axis=-1, keepdims=True))
    return np.concatenate(vectors)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpus", help="sentences: a text file or a TSV/CSV")
    parser.add_argument("--column", default="sentence")
    parser.add_argument("--query", action="append",
                        help="a search query (repeat for more)")
    parser.add_argument("--top-k", type=int, default=5)
    add_model_arguments(parser, batch_size=64)
    args = parser.parse_args()

    sentences = first(read_sentences(args.corpus, args.column),
                      args.max_examples)
    queries = args.query or ["a wonderful, moving film",
                             "boring and far too long"]
    backbone, tokenizer = load_backbone_and_tokenizer(args)
    backbone.trainable = False
    preprocessor = BertPreprocessor(tokenizer,
                                    sequence_length=args.sequence_length)
    corpus_vectors = embed(backbone, preprocessor, sentences, args.batch_size)
    query_vectors = embed(backbone, preprocessor, queries, args.batch_size)
    similarity = query_vectors @ corpus_vectors.T
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
