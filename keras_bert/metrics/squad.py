"""The SQuAD v1.1 metric: exact match and token F1, as the official script.

Answers are normalized the way `evaluate-v1.1.py` does it (lowercase, drop
ASCII punctuation, drop the articles "a", "an", "the", collapse
whitespace); a prediction scores the best value over the reference
answers of its question, and the dataset score is the mean, times 100.
"""

import collections
import re
import string

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(text):
    """Lowercases, strips punctuation and articles, collapses whitespace."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match_score(prediction, reference):
    return float(normalize_answer(prediction) == normalize_answer(reference))


def f1_score(prediction, reference):
    """Token-level F1 between two normalized answers."""
    predicted = normalize_answer(prediction).split()
    expected = normalize_answer(reference).split()
    common = collections.Counter(predicted) & collections.Counter(expected)
    overlap = sum(common.values())
    if overlap == 0:
        return 0.0
    precision = overlap / len(predicted)
    recall = overlap / len(expected)
    return 2 * precision * recall / (precision + recall)


def squad_scores(predictions, references):
    """SQuAD v1.1 exact match and F1 (percentages) over a set of questions.

    Args:
        predictions: dict, question id -> predicted answer text.
        references: dict, question id -> list of reference answer texts.
            Every id here is scored; a question without a prediction
            counts as 0 (as the official script does).

    Returns:
        dict with "exact_match", "f1" (0-100) and "count" (questions).

    Example:
    >>> squad_scores({"q1": "the Broncos"}, {"q1": ["Denver Broncos", "Broncos"]})
    {'exact_match': 100.0, 'f1': 100.0, 'count': 1}
    """
    if not references:
        raise ValueError("squad_scores: no reference questions to score.")
    exact, f1 = 0.0, 0.0
    for question_id, answers in references.items():
        if not answers:
            raise ValueError(
                f"squad_scores: question {question_id!r} has no reference "
                "answer; SQuAD v1.1 questions all have at least one."
            )
        if question_id not in predictions:
            continue
        prediction = predictions[question_id]
        exact += max(exact_match_score(prediction, a) for a in answers)
        f1 += max(f1_score(prediction, a) for a in answers)
    count = len(references)
    return {
        "exact_match": 100.0 * exact / count,
        "f1": 100.0 * f1 / count,
        "count": count,
    }
