"""SQuAD as a retrieval task, and the retrieval metrics of the benchmarks.

Every question of a SQuAD file is a query whose one relevant document is
the paragraph it was asked about; the collection is all paragraphs of the
file. Used by `bench/retrieval_squad.py`.
"""

import json
import os

import numpy as np

DATA = os.environ.get("KERAS_BERT_DATA", "/work/shared/data")
TRAIN = os.path.join(DATA, "squad", "train-v1.1-first11articles.json")
DEV = os.path.join(DATA, "squad", "dev-v1.1.json")


def read_retrieval_set(path, max_articles=None):
    """`(questions, gold, paragraphs, articles)`: question texts, the index
    of each question's paragraph, the paragraph texts (file order) and each
    paragraph's article index; the first `max_articles` articles only
    when given."""
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)["data"][:max_articles]
    questions, gold, paragraphs, articles = [], [], [], []
    for article_index, article in enumerate(data):
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                questions.append(qa["question"])
                gold.append(len(paragraphs))
            paragraphs.append(paragraph["context"])
            articles.append(article_index)
    return questions, np.asarray(gold), paragraphs, np.asarray(articles)


def training_batches(gold, batch_size, steps, seed):
    """`steps` batches of question indices, no paragraph twice in a batch.

    A paragraph twice in a batch would be a false in-batch negative
    (sentence-transformers' NO_DUPLICATES sampler avoids it the same way).
    Questions are drawn in a seeded order, epoch after epoch; one that
    would repeat a paragraph waits for the next batch.
    """
    rng = np.random.default_rng(seed)
    batches, waiting = [], []
    while len(batches) < steps:
        queue = waiting + list(rng.permutation(len(gold)))
        waiting = []
        batch, seen = [], set()
        for index in queue:
            if len(batches) == steps:
                break
            if gold[index] in seen:
                waiting.append(index)
                continue
            batch.append(index)
            seen.add(gold[index])
            if len(batch) == batch_size:
                batches.append(batch)
                batch, seen = [], set()
        waiting += batch
    return np.asarray(batches)


def top_k(query_vectors, document_vectors, k, chunk=2048):
    """Indices of the `k` most similar documents per query, best first."""
    rows = []
    for start in range(0, len(query_vectors), chunk):
        scores = query_vectors[start:start + chunk] @ document_vectors.T
        best = np.argpartition(-scores, k, axis=1)[:, :k]
        order = np.argsort(-np.take_along_axis(scores, best, 1), axis=1,
                           kind="stable")
        rows.append(np.take_along_axis(best, order, 1))
    return np.concatenate(rows)


def retrieval_scores(ranked, gold):
    """Recall@1, recall@10 and MRR@10 (percent) of ranked index lists."""
    hits = ranked[:, :10] == np.asarray(gold)[:, None]
    first = np.where(hits.any(1), hits.argmax(1) + 1, 0)
    reciprocal = np.where(first > 0, 1.0 / np.maximum(first, 1), 0.0)
    return {
        "recall@1": round(100 * float(hits[:, 0].mean()), 2),
        "recall@10": round(100 * float(hits.any(1).mean()), 2),
        "mrr@10": round(100 * float(reciprocal.mean()), 2),
        "questions": int(len(gold)),
    }
