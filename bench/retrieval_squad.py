"""SQuAD retrieval: fine-tune all-MiniLM-L6-v2 with in-batch negatives,
next to sentence-transformers, then rerank with a cross-encoder.

    KERAS_BACKEND=tensorflow .venv/bin/python -m bench.retrieval_squad \
        --output /tmp/bench_results/retrieval_squad.json

The defaults are sized for a 2-core machine (minutes, not hours): 100
steps of 16 pairs, 128 tokens, the first 6 dev articles.

1. Bi-encoder. Training pairs are the SQuAD train questions (the 11
   articles in ../shared/data, 3,807 questions) with their paragraph.
   keras_bert (`BertTextEmbedder.fit` on a `tf.data` dataset of string
   pairs, `MultipleNegativesRankingLoss`) and sentence-transformers
   (`SentenceTransformer` with its own `MultipleNegativesRankingLoss`, in
   a plain PyTorch loop: its Trainer needs `datasets` and `accelerate`,
   which are not installed) see the same batches in the same order (no
   paragraph twice in a batch), the same recipe (AdamW, weight decay 0.01
   not on biases/LayerNorm, epsilon 1e-6, 10% warmup then linear decay,
   clipping at 1.0, scale 20, dropout 0.1) and the same length limit.
   Both are evaluated before and after on SQuAD dev: every question of the
   first `--dev-articles` dev articles against all their paragraphs (all
   48 articles: 10,570 questions, 2,067 paragraphs), recall@1, recall@10,
   MRR@10.
2. Cross-encoder. `BertCrossEncoder` from the MiniLM weights with a fresh
   head, trained listwise on train questions, each with its paragraph and
   `--cross-group - 1` other paragraphs of the same article (seeded); it
   reranks the fine-tuned keras_bert bi-encoder's top `--rerank-top-k` for
   a seeded sample of `--rerank-questions` of those dev questions,
   reported next to the bi-encoder alone on the same questions.
"""

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import machine_info  # noqa: E402
from bench.common import minilm_dir  # noqa: E402
from bench.common import write_json  # noqa: E402
from bench import retrieval_data as data  # noqa: E402


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--learning-rate", type=float, default=2e-5)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--scale", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dev-articles", type=int, default=6,
                        help="the first N dev articles (0: all 48)")
    parser.add_argument("--libraries", default="keras_bert,"
                        "sentence_transformers")
    parser.add_argument("--cross-steps", type=int, default=40)
    parser.add_argument("--cross-learning-rate", type=float, default=5e-5)
    parser.add_argument("--cross-batch-size", type=int, default=4)
    parser.add_argument("--cross-group", type=int, default=4,
                        help="passages per training query (1 relevant)")
    parser.add_argument("--rerank-questions", type=int, default=200)
    parser.add_argument("--rerank-top-k", type=int, default=10)
    parser.add_argument("--output")
    return parser.parse_args()


def sample(count, size, seed):
    if size is None or size >= count:
        return np.arange(count)
    return np.sort(np.random.default_rng(seed).choice(count, size,
                                                      replace=False))


def evaluate(encode, dev):
    """Ranked paragraphs (top 10) of every dev question, and the scores."""
    questions, gold, paragraphs, _ = dev
    start = time.time()
    ranked = data.top_k(encode(questions), encode(paragraphs), 10)
    scores = data.retrieval_scores(ranked, gold)
    scores["seconds"] = round(time.time() - start, 1)
    return scores, ranked


def log_every(steps, every=25):
    import keras

    start = time.time()

    def report(batch, logs):
        if (batch + 1) % every == 0 or batch + 1 == steps:
            print(f"  step {batch + 1}/{steps} loss {logs['loss']:.4f} "
                  f"({time.time() - start:.0f}s)", flush=True)

    return keras.callbacks.LambdaCallback(on_train_batch_end=report)


def keras_bi_encoder(args, train, dev, batches):
    import keras
    import tensorflow as tf

    import keras_bert

    keras.utils.set_random_seed(args.seed)
    model = keras_bert.BertTextEmbedder.from_preset(
        minilm_dir(), sequence_length=args.max_length)
    encode = lambda texts: model.encode(texts, batch_size=32, verbose=0)  # noqa: E731
    before, _ = evaluate(encode, dev)
    print("keras_bert before", before, flush=True)
    # Each column padded to its own longest row, as sentence-transformers.
    model.preprocessor = keras_bert.BertTextEmbedderPreprocessor(
        model.preprocessor.tokenizer, sequence_length=args.max_length,
        dynamic_padding=True)
    questions, gold, paragraphs, _ = train
    order = batches.reshape(-1)
    pairs = tf.data.Dataset.from_tensor_slices((
        [questions[i] for i in order],
        [paragraphs[gold[i]] for i in order],
    )).batch(args.batch_size)
    model.compile(learning_rate=args.learning_rate,
                  num_train_steps=args.steps, warmup_ratio=0.1,
                  weight_decay=0.01)
    start = time.time()
    model.fit(pairs, epochs=1, verbose=0, callbacks=[log_every(args.steps)])
    seconds = round(time.time() - start, 1)
    after, ranked = evaluate(encode, dev)
    print("keras_bert after", after, flush=True)
    return {"before": before, "after": after, "train_seconds": seconds,
            "backend": keras.config.backend()}, ranked


def torch_recipe(model, args):
    """AdamW and the warmup/decay schedule of the recipe, for PyTorch."""
    import torch
    from transformers import get_linear_schedule_with_warmup

    no_decay = ("bias", "LayerNorm.weight")
    named = list(model.named_parameters())
    optimizer = torch.optim.AdamW([
        {"params": [p for n, p in named if not any(k in n for k in no_decay)],
         "weight_decay": 0.01},
        {"params": [p for n, p in named if any(k in n for k in no_decay)],
         "weight_decay": 0.0},
    ], lr=args.learning_rate, eps=1e-6)
    schedule = get_linear_schedule_with_warmup(
        optimizer, int(0.1 * args.steps), args.steps)
    return optimizer, schedule


def sentence_transformers_bi_encoder(args, train, dev, batches):
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.losses import (
        MultipleNegativesRankingLoss,
    )

    torch.manual_seed(args.seed)
    model = SentenceTransformer(minilm_dir(), device="cpu")
    model.max_seq_length = args.max_length
    encode = lambda texts: model.encode(texts, batch_size=32)  # noqa: E731
    before, _ = evaluate(encode, dev)
    print("sentence_transformers before", before, flush=True)
    loss = MultipleNegativesRankingLoss(model, scale=args.scale)
    optimizer, schedule = torch_recipe(model, args)
    questions, gold, paragraphs, _ = train
    model.train()
    start = time.time()
    for step, batch in enumerate(batches):
        features = [model.preprocess([questions[i] for i in batch]),
                    model.preprocess([paragraphs[gold[i]] for i in batch])]
        value = loss(features, None)
        value.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        if (step + 1) % 25 == 0 or step + 1 == len(batches):
            print(f"  step {step + 1}/{len(batches)} loss {value.item():.4f} "
                  f"({time.time() - start:.0f}s)", flush=True)
    seconds = round(time.time() - start, 1)
    model.eval()
    after, _ = evaluate(encode, dev)
    print("sentence_transformers after", after, flush=True)
    return {"before": before, "after": after, "train_seconds": seconds}


def cross_encoder_rerank(args, train, dev, ranked_dev):
    """Trains a `BertCrossEncoder` and reranks the bi-encoder's top k."""
    import keras

    import keras_bert

    questions, gold, paragraphs, articles = train
    rng = np.random.default_rng(args.seed)
    count = args.cross_steps * args.cross_batch_size
    chosen = rng.choice(len(questions), count, replace=count > len(questions))
    groups, labels = [], []
    for index in chosen:
        same_article = np.flatnonzero((articles == articles[gold[index]])
                                      & (np.arange(len(paragraphs))
                                         != gold[index]))
        group = [gold[index]] + list(rng.choice(
            same_article, args.cross_group - 1, replace=False))
        rng.shuffle(group)
        groups.append([paragraphs[p] for p in group])
        labels.append(group.index(gold[index]))
    keras.utils.set_random_seed(args.seed)
    model = keras_bert.BertCrossEncoder.from_preset(
        minilm_dir(), objective="listwise", sequence_length=args.max_length)
    model.compile(learning_rate=args.cross_learning_rate,
                  num_train_steps=args.cross_steps, warmup_ratio=0.1)
    start = time.time()
    model.fit(([questions[i] for i in chosen], groups), np.asarray(labels),
              batch_size=args.cross_batch_size, shuffle=False, verbose=0,
              callbacks=[log_every(args.cross_steps)])
    train_seconds = round(time.time() - start, 1)

    dev_questions, dev_gold, dev_paragraphs, _ = dev
    subset = sample(len(dev_questions), args.rerank_questions, args.seed)
    candidates = ranked_dev[subset, :args.rerank_top_k]
    start = time.time()
    scores = model.score(
        [dev_questions[i] for i in subset for _ in range(args.rerank_top_k)],
        [dev_paragraphs[p] for p in candidates.reshape(-1)], verbose=0)
    seconds = time.time() - start
    order = np.argsort(-scores.reshape(candidates.shape), axis=1,
                       kind="stable")
    reranked = np.take_along_axis(candidates, order, axis=1)
    return {
        "bi_encoder": data.retrieval_scores(candidates, dev_gold[subset]),
        "reranked": data.retrieval_scores(reranked, dev_gold[subset]),
        "train_seconds": train_seconds,
        "rerank_seconds": round(seconds, 1),
        "pairs_per_second": round(candidates.size / seconds, 1),
    }


def main():
    args = parse_args()
    libraries = args.libraries.split(",")
    results = {"machine": machine_info(), "recipe": vars(args)}
    train = data.read_retrieval_set(data.TRAIN)
    dev = data.read_retrieval_set(data.DEV, args.dev_articles or None)
    results["dev"] = {"articles": args.dev_articles or 48,
                      "questions": len(dev[0]), "paragraphs": len(dev[2])}
    batches = data.training_batches(train[1], args.batch_size, args.steps,
                                    args.seed)
    ranked = None
    if "sentence_transformers" in libraries:
        results["sentence_transformers"] = sentence_transformers_bi_encoder(
            args, train, dev, batches)
    if "keras_bert" in libraries:
        results["keras_bert"], ranked = keras_bi_encoder(
            args, train, dev, batches)
    if ranked is not None and args.cross_steps:
        results["cross_encoder"] = cross_encoder_rerank(args, train, dev,
                                                        ranked)
        print("cross_encoder", results["cross_encoder"], flush=True)
    results["load_average_at_end"] = round(os.getloadavg()[0], 2)
    print(results)
    if args.output:
        write_json(args.output, results)


if __name__ == "__main__":
    main()
