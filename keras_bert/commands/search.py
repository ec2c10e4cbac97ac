"""`keras-bert search`: the texts of an index nearest to a query.

    keras-bert search sentences.npy "a film about family" --top-k 3

INDEX is what `keras-bert embed` wrote (the `.npy`, with its `.json` next
to it). The query is embedded with the index's model (or `--model`) and
compared with every vector by cosine similarity; one line per hit:
the score and the text (`--format json`: one JSON object per query).
"""

import json
import os


def add_parser(subparsers):
    parser = subparsers.add_parser(
        "search", help="print the texts of an embed index nearest a query",
        description=__doc__.split("\n\n", 2)[2])
    parser.add_argument("index", metavar="INDEX",
                        help="the .npy written by keras-bert embed")
    parser.add_argument("queries", metavar="QUERY", nargs="+")
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--model", metavar="DIR_OR_NAME",
                        help="embed the queries with this model instead of "
                        "the index's")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.set_defaults(func=run)


def nearest(vectors, query_vectors, top_k):
    """`(indices, scores)` of the `top_k` most cosine-similar rows."""
    import numpy as np

    def unit(x):
        return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True),
                              1e-12)

    scores = unit(query_vectors) @ unit(vectors).T
    order = np.argsort(-scores, axis=1, kind="stable")[:, :top_k]
    return order, np.take_along_axis(scores, order, axis=1)


def read_index(path):
    """`(vectors, metadata)`; errors name the missing or mismatched file."""
    import numpy as np

    from keras_bert.checkpoints.checkpoint_error import naming_file
    from keras_bert.commands.embed import index_paths

    vectors_path, metadata_path = index_paths(path)
    for name in (vectors_path, metadata_path):
        if not os.path.isfile(name):
            raise ValueError(f"{name} not found: INDEX is the .npy written "
                             "by `keras-bert embed` (with its .json).")
    with naming_file(vectors_path):
        vectors = np.load(vectors_path)
    with naming_file(metadata_path), open(metadata_path,
                                          encoding="utf-8") as file:
        metadata = json.load(file)
    if len(metadata.get("texts", [])) != len(vectors):
        raise ValueError(
            f"{metadata_path} lists {len(metadata.get('texts', []))} texts "
            f"but {vectors_path} holds {len(vectors)} vectors.")
    return vectors, metadata


def run(args):
    from keras_bert.commands.embed import load_embedder

    vectors, metadata = read_index(args.index)
    # Queries are embedded as the index was (`embed --precision`).
    model = load_embedder(args.model or metadata["model"],
                          metadata.get("sequence_length"),
                          metadata.get("precision", "float32"))
    query_vectors = model.encode(list(args.queries), verbose=0)
    if query_vectors.shape[1] != vectors.shape[1]:
        raise ValueError(
            f"The model makes vectors of {query_vectors.shape[1]} values; "
            f"the index holds {vectors.shape[1]}.")
    order, scores = nearest(vectors, query_vectors, args.top_k)
    for query, rows, values in zip(args.queries, order, scores):
        hits = [{"score": round(float(score), 4),
                 "text": metadata["texts"][row]}
                for row, score in zip(rows, values)]
        if args.format == "json":
            print(json.dumps({"query": query, "results": hits}))
            continue
        print(f"query: {query}")
        for hit in hits:
            print(f"{hit['score']:.4f}\t{hit['text']}")
    return 0
