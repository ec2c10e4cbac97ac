"""Held-out evaluation of a pretrained model against context-free baselines."""

import math
import random

import numpy as np
from keras import ops

from keras_bert.training.fill_mask import batch_mask_probabilities
from keras_bert.training.fill_mask import top_tokens


def unigram_counts(token_ids, vocabulary_size, special_token_ids=()):
    """Counts token ids over training text: the unigram baseline's model.

    Args:
        token_ids: iterable of id arrays of any shape (or `tf.RaggedTensor`
            batches), e.g. the tokenized training sentences in chunks.
        vocabulary_size: int. Length of the returned array.
        special_token_ids: ids never counted ([CLS], [SEP], [PAD], ...):
            they are never a masked-LM target.

    Returns:
        int64 array `(vocabulary_size,)`.

    Example:
    >>> unigram_counts([[5, 5, 6], [2, 5]], 8, special_token_ids=[2]).tolist()
    [0, 0, 0, 0, 0, 3, 1, 0]
    """
    counts = np.zeros(vocabulary_size, "int64")
    for ids in token_ids:
        if hasattr(ids, "flat_values"):
            ids = ids.flat_values
        ids = np.ravel(np.asarray(ids, "int64"))
        counts += np.bincount(ids, minlength=vocabulary_size)
    counts[list(special_token_ids)] = 0
    return counts


def evaluate_pretraining(model, dataset, counts, max_batches=None):
    """Masked-token and NSP accuracy of `model` next to their baselines.

    The masked-LM baseline is the best predictor that ignores context:
    always the most frequent training token (accuracy), and the unigram
    distribution with add-one smoothing (cross-entropy). The NSP baseline
    is the share of the majority label (50% for balanced pairs).

    Args:
        model: a `BertPretrainer`.
        dataset: batches `(x, y, sample_weight)` as `pretraining_dataset`
            makes them (a finite, held-out dataset).
        counts: unigram counts from `unigram_counts` over training text.
        max_batches: int or None. Stop after this many batches.

    Returns:
        dict: `masked_tokens`, `mlm_accuracy`, `mlm_loss`,
        `unigram_accuracy`, `unigram_loss`, and when the model has NSP,
        `nsp_examples`, `nsp_accuracy`, `nsp_majority`; each accuracy
        also with a `_stderr` (binomial standard error).
    """
    log_probs = np.log((counts + 1.0) / (counts.sum() + len(counts)))
    most_frequent = int(np.argmax(counts))
    mlm_hits = mlm_nll = unigram_hits = unigram_nll = weight = 0.0
    nsp_hits = nsp_total = nsp_positive = 0
    for index, (x, y, sample_weight) in enumerate(dataset):
        if max_batches is not None and index >= max_batches:
            break
        x = {k: np.asarray(v) for k, v in x.items()}
        outputs = model.predict_on_batch(x)
        logits = np.asarray(ops.convert_to_numpy(outputs["mlm_logits"]),
                            "float64")
        targets = np.asarray(y["mlm_logits"])
        w = np.asarray(sample_weight["mlm_logits"], "float64")
        log_softmax = logits - _logsumexp(logits)
        nll = -np.take_along_axis(log_softmax, targets[..., None], -1)[..., 0]
        mlm_hits += np.sum(w * (np.argmax(logits, -1) == targets))
        mlm_nll += np.sum(w * nll)
        unigram_hits += np.sum(w * (targets == most_frequent))
        unigram_nll += np.sum(w * -log_probs[targets])
        weight += np.sum(w)
        if "nsp_logits" in outputs and "nsp_logits" in y:
            labels = np.asarray(y["nsp_logits"])
            predicted = np.argmax(ops.convert_to_numpy(outputs["nsp_logits"]), -1)
            nsp_hits += int(np.sum(predicted == labels))
            nsp_total += len(labels)
            nsp_positive += int(np.sum(labels))
    if weight == 0:
        raise ValueError(
            "The evaluation data has no masked tokens: the held-out split is "
            "empty. Use a larger corpus or a larger held-out fraction."
        )
    results = {
        "masked_tokens": int(weight),
        "mlm_accuracy": mlm_hits / weight,
        "mlm_loss": mlm_nll / weight,
        "unigram_accuracy": unigram_hits / weight,
        "unigram_loss": unigram_nll / weight,
    }
    if nsp_total:
        results.update(
            nsp_examples=nsp_total,
            nsp_accuracy=nsp_hits / nsp_total,
            nsp_majority=max(nsp_positive, nsp_total - nsp_positive) / nsp_total,
        )
    for key, count in (("mlm_accuracy", weight), ("unigram_accuracy", weight),
                       ("nsp_accuracy", nsp_total), ("nsp_majority", nsp_total)):
        if key in results:
            p = results[key]
            results[f"{key}_stderr"] = math.sqrt(p * (1 - p) / count)
    return results


def _logsumexp(logits):
    peak = np.max(logits, axis=-1, keepdims=True)
    return peak + np.log(np.sum(np.exp(logits - peak), axis=-1, keepdims=True))


def fill_mask_examples(model, tokenizer, documents, count=5, seed=0,
                       counts=None):
    """Masks one known whole word in a few sentences and predicts it.

    Sentences of 8 to 25 words are drawn (seeded) from `documents`; in
    each, the middle one of the alphabetic words the vocabulary holds
    whole (longer than 2 letters, not the first word) is replaced by
    `[MASK]`, so the answer is a single token the model could name.

    Args:
        model: a `BertPretrainer`.
        tokenizer: its `BertTokenizer`.
        documents: iterable of documents (lists of sentences), e.g.
            `TextCorpus.documents("heldout")`.
        count: int. Number of examples.
        seed: int. Seeds the choice of sentences.
        counts: NumPy array or None. Training-token counts per id (what
            `unigram_counts` returns), to rank the answer by frequency.

    Returns:
        A list of dicts: `text` (with the mask), `answer`, `predictions`
        (the top five `(token, probability)` pairs), `correct` (top-1 hit),
        `rank` (the answer's place among the predictions, or None),
        `model_rank` (its place among every token of the vocabulary, 1 is
        the model's first guess) and, with `counts`, `frequency_rank` (its
        place when ranked by training frequency alone, what a model that
        ignores the context would guess).
    """
    vocabulary = set(tokenizer.get_vocabulary())
    lowercase = tokenizer.lowercase
    candidates = [sentence.split() for document in documents
                  for sentence in document
                  if 8 <= len(sentence.split()) <= 25]
    random.Random(seed).shuffle(candidates)
    texts, answers = [], []
    for words in candidates:
        choices = [i for i, w in enumerate(words[1:], 1) if w.isalpha()
                   and len(w) > 2 and (w.lower() if lowercase else w)
                   in vocabulary]
        if not choices:
            continue
        index = choices[len(choices) // 2]
        answers.append(words[index])
        texts.append(" ".join(words[:index] + [tokenizer.mask_token]
                              + words[index + 1:]))
        if len(texts) == count:
            break
    examples = []
    rows = batch_mask_probabilities(model, tokenizer, texts)
    for text, answer, row in zip(texts, answers, rows):
        answer_id = tokenizer.token_to_id(answer.lower() if lowercase
                                          else answer)
        model_rank = _rank(row[0], answer_id)
        example = {"text": text, "answer": answer,
                   "predictions": top_tokens(row[0], tokenizer, 5),
                   "correct": model_rank == 1,
                   "rank": model_rank if model_rank <= 5 else None,
                   "model_rank": model_rank}
        if counts is not None:
            example["frequency_rank"] = _rank(counts, answer_id)
        examples.append(example)
    return examples


def fill_mask_summary(examples):
    """What `fill_mask_examples` says over many sentences, next to word
    frequency alone (the examples need `frequency_rank`).

    Returns:
        dict: `examples`; `model_top5` and `frequency_top5`, the share of
        answers in the model's top five and among the five most frequent
        training tokens; `above_frequency`, the share the model ranks
        higher than frequency does; `median_model_rank` and
        `median_frequency_rank`.

    Example:
    >>> fill_mask_summary([{"model_rank": 2, "frequency_rank": 40},
    ...                    {"model_rank": 90, "frequency_rank": 7}])["model_top5"]
    0.5
    """
    model = np.array([example["model_rank"] for example in examples])
    frequency = np.array([example["frequency_rank"] for example in examples])
    return {"examples": len(examples),
            "model_top5": float(np.mean(model <= 5)),
            "frequency_top5": float(np.mean(frequency <= 5)),
            "above_frequency": float(np.mean(model < frequency)),
            "median_model_rank": float(np.median(model)),
            "median_frequency_rank": float(np.median(frequency))}


def _rank(scores, index):
    # Ties count in the answer's favour: 1 + the entries strictly above it.
    return 1 + int(np.sum(np.asarray(scores) > scores[index]))
