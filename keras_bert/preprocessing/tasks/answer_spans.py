"""From start/end logits over windows to answer text (SQuAD post-processing).

Every window of a question proposes spans from its `n_best_size` best
start and end tokens; a span is valid when both ends are context tokens,
the end is not before the start and it is at most `max_answer_length`
tokens long. The best valid span over all windows of the question (score
= start logit + end logit) is the answer, and its text is cut from the
context with the tokens' character offsets, so it is exactly a substring
of the context.
"""

import numpy as np


def best_answer_spans(logits, offsets, example_index, contexts,
                      n_best_size=20, max_answer_length=30):
    """Picks each question's best answer across its windows.

    Args:
        logits: float array `(num_windows, sequence_length, 2)`, start
            logits in `[..., 0]` and end logits in `[..., 1]`.
        offsets: int array `(num_windows, sequence_length, 2)`: the
            character `[start, end)` of each context token in its context,
            -1 for every other position (question, special tokens, padding).
        example_index: int array `(num_windows,)`: the question each window
            belongs to (an index into `contexts`).
        contexts: list of context strings, one per question.
        n_best_size: int. Start and end candidates per window.
        max_answer_length: int. Longest answer in tokens.

    Returns:
        list (one per question) of dicts `{"text", "start", "end",
        "score"}`; "text" is "" and "score" -inf when no window has a
        valid span.

    Example:
    >>> logits = np.full((1, 5, 2), -9.0)
    >>> logits[0, 2, 0] = logits[0, 3, 1] = 5.0
    >>> offsets = np.array([[[-1, -1], [-1, -1], [0, 3], [4, 9], [-1, -1]]])
    >>> best_answer_spans(logits, offsets, np.array([0]), ["the cat sat"])[0]["text"]
    'the cat s'
    """
    logits = np.asarray(logits, dtype="float32")
    offsets = np.asarray(offsets)
    example_index = np.asarray(example_index)
    if logits.shape[:2] != offsets.shape[:2] or logits.shape[-1] != 2:
        raise ValueError(
            f"best_answer_spans: logits {logits.shape} must be (windows, "
            f"length, 2) matching offsets {offsets.shape}."
        )
    if len(example_index) != len(logits):
        raise ValueError(
            f"best_answer_spans: {len(example_index)} window indices for "
            f"{len(logits)} windows of logits."
        )
    best = [
        {"text": "", "start": -1, "end": -1, "score": float("-inf")}
        for _ in contexts
    ]
    for window, example in enumerate(example_index):
        start_logits, end_logits = logits[window, :, 0], logits[window, :, 1]
        in_context = offsets[window, :, 0] >= 0
        starts = np.argsort(-start_logits, kind="stable")[:n_best_size]
        ends = np.argsort(-end_logits, kind="stable")[:n_best_size]
        for start in starts:
            if not in_context[start]:
                continue
            for end in ends:
                if not in_context[end] or not (
                    0 <= end - start < max_answer_length
                ):
                    continue
                score = float(start_logits[start] + end_logits[end])
                if score > best[example]["score"]:
                    char_start = int(offsets[window, start, 0])
                    char_end = int(offsets[window, end, 1])
                    best[example] = {
                        "text": contexts[example][char_start:char_end],
                        "start": char_start,
                        "end": char_end,
                        "score": score,
                    }
    return best
