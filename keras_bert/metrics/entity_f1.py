"""Entity-level precision, recall and F1 for IOB tagging (CoNLL-2003 style).

An entity counts as correct only when its type and its exact token span
both match a reference entity. Chunks are read with the rules of the
CoNLL `conlleval` script, which read IOB1 (the original CoNLL-2003 files,
where `B-` only separates two adjacent entities of one type) and IOB2
(every entity starts with `B-`) the same way: an entity starts at `B-X`,
or at `I-X` after `O` or after a tag of another type, and runs over the
following `I-X` tags.
"""

import collections


def _split_tag(tag, position):
    if tag == "O":
        return "O", None
    prefix, sep, kind = tag.partition("-")
    if not sep or prefix not in ("B", "I") or not kind:
        raise ValueError(
            f"Tag {tag!r} at token {position} is not IOB: expected 'O', "
            "'B-TYPE' or 'I-TYPE' (IOB1 or IOB2)."
        )
    return prefix, kind


def get_entities(tags):
    """Returns the entities of one tag sequence as `(type, start, end)`.

    `end` is exclusive. Works for IOB1 and IOB2 tags.

    Example:
    >>> get_entities(["B-PER", "I-PER", "O", "I-LOC", "B-LOC", "I-ORG"])
    [('PER', 0, 2), ('LOC', 3, 4), ('LOC', 4, 5), ('ORG', 5, 6)]
    """
    entities = []
    kind, start = None, None
    for position, tag in enumerate(list(tags) + ["O"]):
        prefix, tag_kind = _split_tag(tag, position)
        continues = prefix == "I" and tag_kind == kind
        if kind is not None and not continues:
            entities.append((kind, start, position))
            kind = None
        if prefix != "O" and not continues:
            kind, start = tag_kind, position
    return entities


def entity_scores(references, predictions):
    """Micro-averaged entity precision/recall/F1 (percentages) and per type.

    Args:
        references: list of tag sequences (one list of tags per sentence).
        predictions: list of tag sequences, the same lengths.

    Returns:
        dict with "precision", "recall", "f1" (0-100), "num_reference",
        "num_predicted", "num_correct" and "per_type" (type -> the same
        precision/recall/f1/support).

    Example:
    >>> entity_scores([["B-PER", "I-PER", "O"]], [["B-PER", "O", "O"]])["f1"]
    0.0
    """
    if len(references) != len(predictions):
        raise ValueError(
            f"entity_scores: {len(references)} reference sentences but "
            f"{len(predictions)} predicted ones."
        )
    counts = collections.defaultdict(lambda: [0, 0, 0])  # ref, pred, correct
    for index, (ref_tags, pred_tags) in enumerate(zip(references, predictions)):
        if len(ref_tags) != len(pred_tags):
            raise ValueError(
                f"entity_scores: sentence {index} has {len(ref_tags)} "
                f"reference tags but {len(pred_tags)} predicted tags."
            )
        expected = set(get_entities(ref_tags))
        found = set(get_entities(pred_tags))
        for kind, _, _ in expected:
            counts[kind][0] += 1
        for kind, _, _ in found:
            counts[kind][1] += 1
        for kind, _, _ in expected & found:
            counts[kind][2] += 1

    def score(num_ref, num_pred, num_correct):
        precision = 100.0 * num_correct / num_pred if num_pred else 0.0
        recall = 100.0 * num_correct / num_ref if num_ref else 0.0
        f1 = (
            2 * precision * recall / (precision + recall)
            if precision + recall
            else 0.0
        )
        return {"precision": precision, "recall": recall, "f1": f1}

    totals = [sum(c[i] for c in counts.values()) for i in range(3)]
    result = score(*totals)
    result.update(
        num_reference=totals[0], num_predicted=totals[1], num_correct=totals[2]
    )
    result["per_type"] = {
        kind: {**score(*c), "support": c[0]} for kind, c in sorted(counts.items())
    }
    return result
