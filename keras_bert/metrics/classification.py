"""Sentence-level scores for GLUE-style tasks: accuracy, F1, correlations."""

import numpy as np


def classification_scores(labels, predictions, positive_label=1):
    """Accuracy and, for two classes, F1 of `positive_label` (percentages).

    MRPC is reported as accuracy and F1 of the paraphrase class (label 1).

    Example:
    >>> classification_scores([1, 0, 1, 1], [1, 1, 0, 1])
    {'accuracy': 50.0, 'f1': 66.66666666666667, 'count': 4}
    """
    labels = np.asarray(labels)
    predictions = np.asarray(predictions)
    if labels.shape != predictions.shape or labels.ndim != 1:
        raise ValueError(
            f"classification_scores: labels {labels.shape} and predictions "
            f"{predictions.shape} must be 1-D and the same length."
        )
    if labels.size == 0:
        raise ValueError("classification_scores: no examples to score.")
    result = {"accuracy": 100.0 * float(np.mean(labels == predictions))}
    if len(set(labels.tolist()) | set(predictions.tolist())) <= 2:
        true_pos = int(np.sum((predictions == positive_label) & (labels == positive_label)))
        predicted = int(np.sum(predictions == positive_label))
        actual = int(np.sum(labels == positive_label))
        result["f1"] = (
            100.0 * 2 * true_pos / (predicted + actual) if predicted + actual else 0.0
        )
    result["count"] = int(labels.size)
    return result


def regression_scores(targets, predictions):
    """Pearson and Spearman correlations (x100) and MSE, as for STS-B.

    Example:
    >>> regression_scores([1.0, 2.0, 3.0], [2.0, 4.0, 6.5])["spearman"]
    100.0
    """
    targets = np.asarray(targets, "float64").reshape(-1)
    predictions = np.asarray(predictions, "float64").reshape(-1)
    if targets.shape != predictions.shape or targets.size < 2:
        raise ValueError(
            f"regression_scores: need two or more targets and as many "
            f"predictions, got {targets.size} and {predictions.size}."
        )

    def ranks(values):
        # Average ranks for ties, as Spearman's rho is defined.
        order = np.argsort(values, kind="stable")
        ranked = np.empty(len(values))
        ranked[order] = np.arange(len(values), dtype="float64")
        for value in np.unique(values):
            tied = values == value
            ranked[tied] = ranked[tied].mean()
        return ranked

    def pearson(a, b):
        a, b = a - a.mean(), b - b.mean()
        denominator = np.sqrt((a * a).sum() * (b * b).sum())
        return float((a * b).sum() / denominator) if denominator else 0.0

    return {
        "pearson": 100.0 * pearson(targets, predictions),
        "spearman": 100.0 * pearson(ranks(targets), ranks(predictions)),
        "mse": float(np.mean((targets - predictions) ** 2)),
        "count": int(targets.size),
    }
