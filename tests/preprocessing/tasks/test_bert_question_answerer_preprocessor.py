import numpy as np

from keras_bert.metrics import squad_scores
from keras_bert.preprocessing import BertTokenizer
from keras_bert.preprocessing.tasks import BertQuestionAnswererPreprocessor
from tests.test_case import TestCase

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "who", "what",
              "sat", "the", "cat", "dog", "mat", "on", "?", ".", "a", "red",
              "##dish", "ran", "in", "park"]
CLS, SEP = 2, 3
# 16 context tokens: the cat sat on the mat . a red ##dish dog ran in the
# park . ("reddish" is two pieces, tokens 8 and 9).
CONTEXT = "The cat sat on the mat. A reddish dog ran in the park."


def preprocessor(**kwargs):
    kwargs = {"sequence_length": 12, "doc_stride": 3, "max_query_length": 3,
              **kwargs}
    return BertQuestionAnswererPreprocessor(BertTokenizer(VOCABULARY), **kwargs)


def perfect_logits(windows):
    logits = np.full(windows["offsets"].shape, -5.0, "float32")
    for row, (start, end) in enumerate(windows["labels"]):
        logits[row, start, 0] = logits[row, end, 1] = 5.0
    return logits


class BertQuestionAnswererPreprocessorTest(TestCase):
    def test_windows_cover_the_context_with_stride(self):
        windows = preprocessor().windows(["Who sat?"], [CONTEXT])
        # Question "who sat ?" = 3 pieces; room = 12 - 3 - 3 = 6 context
        # tokens per window, starting at context tokens 0, 3, 6, 9 and 12
        # (that last one reaches the end and holds 4).
        self.assertEqual(windows["example_index"].tolist(), [0] * 5)
        starts = windows["offsets"][:, :, 0]
        first_context = [row[row >= 0][0] for row in starts]
        # Character starts of "the", "on", ".", "##dish", "in".
        self.assertEqual(first_context, [0, 12, 22, 29, 42])
        ids = windows["inputs"]["token_ids"]
        np.testing.assert_array_equal(ids[:, :5], [[CLS, 5, 7, 13, SEP]] * 5)
        segment_ids = windows["inputs"]["segment_ids"]
        self.assertEqual(segment_ids[0].tolist(), [0] * 5 + [1] * 7)
        self.assertEqual(windows["inputs"]["padding_mask"][-1].tolist(),
                         [1] * 10 + [0] * 2)

    def test_offsets_give_back_each_token_text(self):
        tokenizer = BertTokenizer(VOCABULARY)
        windows = preprocessor().windows(["Who sat?"], [CONTEXT])
        for ids, offsets in zip(windows["inputs"]["token_ids"],
                                windows["offsets"]):
            for token_id, (start, end) in zip(ids, offsets):
                if start < 0:
                    continue
                piece = tokenizer.id_to_token(token_id).lstrip("#")
                self.assertEqual(CONTEXT[start:end].lower()[-len(piece):],
                                 piece)

    def test_labels_point_at_the_answer_or_cls(self):
        answer_start = CONTEXT.index("reddish dog")
        windows = preprocessor().windows(
            ["What ran?"], [CONTEXT], answers=[(answer_start, "reddish dog")]
        )
        for labels, offsets in zip(windows["labels"], windows["offsets"]):
            start, end = labels
            if start == 0:
                self.assertEqual(end, 0)
                continue
            self.assertEqual(
                CONTEXT[offsets[start, 0]: offsets[end, 1]], "reddish dog"
            )
        # "red ##dish dog" are context tokens 8-10: of the windows starting
        # at 0, 3, 6, 9, 12 only the one at 6 holds all three.
        labelled = [tuple(l) != (0, 0) for l in windows["labels"]]
        self.assertEqual(labelled, [False, False, True, False, False])

    def test_perfect_logits_give_exact_match_100(self):
        questions = ["Who sat?", "What ran?", "What sat on?", "Where?"]
        answers = ["the cat", "A reddish dog", "the mat", "the park"]
        starts = [CONTEXT.lower().index(a.lower()) for a in answers]
        contexts = [CONTEXT] * 4
        layer = preprocessor()
        windows = layer.windows(questions, contexts, answers=[
            (s, CONTEXT[s: s + len(a)]) for s, a in zip(starts, answers)])
        # Windows without the answer predict [CLS], which is not a span.
        best = layer.best_answers(windows, perfect_logits(windows), contexts)
        scores = squad_scores(
            {str(i): b["text"] for i, b in enumerate(best)},
            {str(i): [a] for i, a in enumerate(answers)},
        )
        self.assertEqual(scores["exact_match"], 100.0)
        # The text comes from the context itself, in its own casing.
        self.assertEqual([b["text"] for b in best],
                         [CONTEXT[s: s + len(a)] for s, a in zip(starts, answers)])

    def test_answer_in_no_window_skipped_in_training_scored_in_eval(self):
        layer = preprocessor(doc_stride=5)
        long_answer = "The cat sat on the mat. A reddish"  # 9 tokens > 6
        short_start = CONTEXT.index("dog")
        windows = layer.windows(
            ["Who sat?", "What ran?"], [CONTEXT, CONTEXT],
            answers=[(0, long_answer), (short_start, "dog")],
        )
        self.assertEqual(windows["skipped"], [0])
        self.assertEqual(set(windows["example_index"].tolist()), {1})
        # Without answers (evaluation) the question keeps its windows.
        windows = layer.windows(["Who sat?", "What ran?"], [CONTEXT, CONTEXT])
        self.assertEqual(set(windows["example_index"].tolist()), {0, 1})
        self.assertEqual(windows["skipped"], [])

    def test_answer_not_matching_the_context_is_skipped(self):
        windows = preprocessor().windows(
            ["Who sat?", "What ran?"], [CONTEXT, CONTEXT],
            answers=[(4, "dog"), (CONTEXT.index("dog"), "dog")],
        )
        self.assertEqual(windows["skipped"], [0])

    def test_long_question_is_cut_and_counted(self):
        windows = preprocessor().windows(
            ["Who sat on the mat?", "Who?"], [CONTEXT, CONTEXT]
        )
        self.assertEqual(windows["truncated_questions"], 1)
        first = windows["inputs"]["token_ids"][0]
        # Three question pieces kept: who sat on, then [SEP].
        self.assertEqual(first[:5].tolist(), [CLS, 5, 7, 12, SEP])

    def test_empty_context_gives_one_window_and_no_answer(self):
        layer = preprocessor()
        windows = layer.windows(["Who?"], [""])
        self.assertEqual(len(windows["example_index"]), 1)
        logits = np.zeros(windows["offsets"].shape, "float32")
        self.assertEqual(layer.best_answers(windows, logits, [""])[0]["text"], "")

    def test_bad_arguments(self):
        with self.assertRaisesRegex(ValueError, "leaves no room"):
            preprocessor(sequence_length=8, max_query_length=5)
        with self.assertRaisesRegex(ValueError, "doc_stride=7"):
            preprocessor(doc_stride=7)
        with self.assertRaisesRegex(ValueError, "2 questions, 1 contexts"):
            preprocessor().windows(["a", "b"], [CONTEXT])
        with self.assertRaisesRegex(ValueError, "No training windows"):
            preprocessor().windows(["Who?"], [CONTEXT], answers=[(0, "x")])

    def test_config_round_trip(self):
        layer = preprocessor()
        revived = BertQuestionAnswererPreprocessor.from_config(layer.get_config())
        self.assertEqual(revived.get_config(), layer.get_config())
        for key, value in layer.windows(["Who?"], [CONTEXT])["inputs"].items():
            np.testing.assert_array_equal(
                revived.windows(["Who?"], [CONTEXT])["inputs"][key], value)
