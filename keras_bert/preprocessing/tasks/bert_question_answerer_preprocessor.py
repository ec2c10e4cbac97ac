import logging

import keras
import numpy as np

from keras_bert.preprocessing.preprocessor import Preprocessor
from keras_bert.preprocessing.tasks.answer_spans import best_answer_spans

logger = logging.getLogger(__name__)


def _as_lists(ragged):
    return [np.asarray(row, dtype="int64") for row in ragged.to_list()]


def _answer_tokens(starts, ends, answer_start, answer_end):
    """Token positions `(first, last)` in one window's context tokens, or
    None when the answer is not wholly inside the window."""
    if len(starts) == 0 or starts[0] > answer_start or ends[-1] < answer_end:
        return None
    first = int(np.flatnonzero(starts <= answer_start)[-1])
    last = int(np.flatnonzero(ends >= answer_end)[0])
    return first, max(first, last)


@keras.saving.register_keras_serializable(package="keras_bert")
class BertQuestionAnswererPreprocessor(Preprocessor):
    """SQuAD-style windows over (question, context) pairs, and back to text.

    Each question is tokenized and cut to `max_query_length` pieces. Its
    context is tokenized once with character offsets and split into
    windows of the room left (`sequence_length - len(question) - 3`),
    consecutive windows starting `doc_stride` tokens apart (the original
    BERT's meaning; Hugging Face's `run_qa.py` calls the overlap
    `doc_stride` instead). Every window is packed as `[CLS] question [SEP]
    context piece [SEP]` and keeps, per position, the character offsets of
    its context tokens (-1 elsewhere). `best_answers` turns the model's
    logits back into answer text.

    Training labels are the answer's first and last token in each window;
    a window that does not hold the whole answer is labelled at [CLS]
    (position 0), as in the original BERT. A question whose answer is in
    no window (cut by truncation) or does not match its context is left
    out of training and counted in `skipped`; for evaluation (no answers
    given) every question keeps its windows and is scored.

    Args:
        tokenizer: `keras_bert.BertTokenizer`.
        sequence_length: int. Window length in tokens (BERT: 384).
        doc_stride: int or None. Tokens between the starts of two windows;
            None is BERT's 128, or half the context room when that is
            less, so an answer near one window's edge is whole in the next.
        max_query_length: int or None. Question pieces kept; None is
            BERT's 64 (in 384 tokens), or a sixth of `sequence_length`
            when that is less.

    Example:
    >>> tokenizer = keras_bert.BertTokenizer(
    ...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "who", "sat",
    ...      "the", "cat", "?", "."])
    >>> pre = BertQuestionAnswererPreprocessor(tokenizer, sequence_length=12,
    ...     doc_stride=2, max_query_length=4)
    >>> w = pre.windows(["Who sat?"], ["The cat sat. The cat sat."])
    >>> w["inputs"]["token_ids"].shape, w["example_index"].tolist()
    ((2, 12), [0, 0])
    """

    def __init__(self, tokenizer, sequence_length=384, doc_stride=None,
                 max_query_length=None, **kwargs):
        super().__init__(tokenizer, sequence_length=sequence_length, **kwargs)
        if max_query_length is None:
            max_query_length = min(64, sequence_length // 6)
        if doc_stride is None:
            doc_stride = max(1, min(128, (sequence_length - max_query_length
                                          - 3) // 2))
        context_room = sequence_length - max_query_length - 3
        if context_room < 1:
            raise ValueError(
                f"sequence_length={sequence_length} leaves no room for "
                f"context after a question of max_query_length="
                f"{max_query_length} and 3 special tokens."
            )
        if not 1 <= doc_stride <= context_room:
            raise ValueError(
                f"doc_stride={doc_stride} must be between 1 and the "
                f"context room {context_room} (sequence_length - "
                "max_query_length - 3), or windows would skip tokens."
            )
        self.doc_stride = doc_stride
        self.max_query_length = max_query_length

    def windows(self, questions, contexts, answers=None):
        """Tokenizes and splits questions with their contexts into windows.

        Args:
            questions: list of question strings.
            contexts: list of context strings (one per question).
            answers: optional list (one per question) of `(answer_start,
                answer_text)` pairs: character start in the context and
                the answer. Given: training labels are made and questions
                without a usable answer are skipped.

        Returns:
            dict with "inputs" (the backbone's arrays, `(windows,
            sequence_length)`), "offsets" (`(windows, sequence_length, 2)`
            character offsets, -1 outside the context), "example_index"
            (`(windows,)`), "labels" (`(windows, 2)` start/end positions,
            only with answers), "skipped" (indices of questions left out of
            training) and "truncated_questions" (how many questions were
            cut to `max_query_length`).
        """
        if len(questions) != len(contexts) or (
            answers is not None and len(answers) != len(questions)
        ):
            raise ValueError(
                f"Got {len(questions)} questions, {len(contexts)} contexts"
                + (f" and {len(answers)} answers" if answers is not None
                   else "")
                + "; there must be one of each per question."
            )
        if not questions:
            raise ValueError("No questions to make windows from.")
        question_ids = _as_lists(self.tokenizer(list(questions)))
        context_ids, starts, ends = (
            _as_lists(part)
            for part in self.tokenizer.tokenize_with_offsets(list(contexts))
        )
        cls_id, sep_id = self.tokenizer.cls_token_id, self.tokenizer.sep_token_id
        length = self.sequence_length
        rows, skipped, truncated = [], [], 0
        for index, question in enumerate(question_ids):
            if len(question) > self.max_query_length:
                truncated += 1
                question = question[: self.max_query_length]
            room = length - len(question) - 3
            answer_span = None
            if answers is not None:
                answer_start, answer_text = answers[index]
                answer_end = answer_start + len(answer_text)
                if contexts[index][answer_start:answer_end] != answer_text:
                    skipped.append(index)
                    continue
                answer_span = (answer_start, answer_end)
            example_rows = []
            first = 0
            while True:
                count = min(len(context_ids[index]) - first, room)
                piece = slice(first, first + count)
                token_ids = np.concatenate(
                    [[cls_id], question, [sep_id],
                     context_ids[index][piece], [sep_id]]
                )
                offset_rows = np.full((length, 2), -1, "int64")
                context_at = len(question) + 2
                offset_rows[context_at: context_at + count, 0] = starts[index][piece]
                offset_rows[context_at: context_at + count, 1] = ends[index][piece]
                label = None
                if answer_span is not None:
                    tokens = _answer_tokens(
                        starts[index][piece], ends[index][piece], *answer_span
                    )
                    label = (0, 0) if tokens is None else (
                        context_at + tokens[0], context_at + tokens[1]
                    )
                example_rows.append(
                    (index, token_ids, len(question) + 2, offset_rows, label)
                )
                if first + count >= len(context_ids[index]):
                    break
                first += min(count, self.doc_stride)
            if answer_span is not None and all(
                row[-1] == (0, 0) for row in example_rows
            ):
                skipped.append(index)
                continue
            rows.extend(example_rows)
        if truncated:
            logger.info("%d of %d questions were longer than max_query_length"
                        "=%d pieces and were cut.", truncated, len(questions),
                        self.max_query_length)
        if skipped:
            logger.warning("%d of %d questions have no answer inside any "
                           "window (or an answer that does not match the "
                           "context) and are left out of training.",
                           len(skipped), len(questions))
        if not rows:
            raise ValueError(
                "No training windows: no question has its answer inside a "
                "window. Check answer_start values, or raise sequence_length."
            )
        return self._stack(rows, answers is not None, skipped, truncated)

    def _stack(self, rows, with_labels, skipped, truncated):
        length = self.sequence_length
        token_ids = np.zeros((len(rows), length), "int32")
        token_ids += self.tokenizer.pad_token_id
        segment_ids = np.zeros((len(rows), length), "int32")
        padding_mask = np.zeros((len(rows), length), "int32")
        for row, (_, ids, context_at, _, _) in enumerate(rows):
            token_ids[row, : len(ids)] = ids
            segment_ids[row, context_at: len(ids)] = 1
            padding_mask[row, : len(ids)] = 1
        result = {
            "inputs": {
                "token_ids": token_ids,
                "segment_ids": segment_ids,
                "padding_mask": padding_mask,
            },
            "offsets": np.stack([row[3] for row in rows]),
            "example_index": np.array([row[0] for row in rows], "int64"),
            "skipped": skipped,
            "truncated_questions": truncated,
        }
        if with_labels:
            result["labels"] = np.array([row[4] for row in rows], "int32")
        return result

    def best_answers(self, windows, logits, contexts, n_best_size=20,
                     max_answer_length=30):
        """Best answer per question from the model's logits on `windows`.

        See `keras_bert.preprocessing.tasks.answer_spans.best_answer_spans`.
        """
        return best_answer_spans(
            keras.ops.convert_to_numpy(logits),
            windows["offsets"],
            windows["example_index"],
            contexts,
            n_best_size=n_best_size,
            max_answer_length=max_answer_length,
        )

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "doc_stride": self.doc_stride,
                "max_query_length": self.max_query_length,
            }
        )
        return config
