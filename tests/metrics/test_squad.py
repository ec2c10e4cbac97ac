from keras_bert.metrics import exact_match_score
from keras_bert.metrics import f1_score
from keras_bert.metrics import normalize_answer
from keras_bert.metrics import squad_scores
from tests.test_case import TestCase


class SquadMetricTest(TestCase):
    def test_normalization_matches_the_official_rules(self):
        # Lowercase, ASCII punctuation out, articles out, spaces collapsed.
        self.assertEqual(normalize_answer("The  Denver Broncos!"),
                         "denver broncos")
        self.assertEqual(normalize_answer("an apple, a pear"), "apple pear")
        # Articles go only as whole words; "theory" keeps its "the".
        self.assertEqual(normalize_answer("Theory of the Atom"),
                         "theory of atom")
        # Punctuation is removed, not replaced by a space.
        self.assertEqual(normalize_answer("U.S."), "us")
        # Non-ASCII punctuation is not in string.punctuation: kept.
        self.assertEqual(normalize_answer("«Paris»"), "«paris»")

    def test_exact_match_and_f1_by_hand(self):
        self.assertEqual(exact_match_score("the Broncos", "Broncos"), 1.0)
        self.assertEqual(exact_match_score("Denver", "Broncos"), 0.0)
        # prediction "denver broncos" vs reference "broncos": overlap 1,
        # precision 1/2, recall 1/1, F1 = 2/3.
        self.assertAlmostEqual(f1_score("Denver Broncos", "the Broncos"), 2 / 3)
        # Tokens count as a multiset: "x x y" vs "x y y" share one x and
        # one y, so P = R = 2/3.
        self.assertAlmostEqual(f1_score("x x y", "x y y"), 2 / 3)
        self.assertEqual(f1_score("", "broncos"), 0.0)

    def test_dataset_score_takes_best_reference_and_counts_missing(self):
        predictions = {"q1": "Denver Broncos", "q2": "1990"}
        references = {
            "q1": ["Broncos", "Denver Broncos"],  # EM 1, F1 1
            "q2": ["in 1990s", "1991"],  # EM 0, F1 0
            "q3": ["Paris"],  # no prediction: 0
        }
        scores = squad_scores(predictions, references)
        self.assertAlmostEqual(scores["exact_match"], 100 / 3)
        self.assertAlmostEqual(scores["f1"], 100 / 3)
        self.assertEqual(scores["count"], 3)

    def test_partial_f1_over_questions(self):
        scores = squad_scores({"a": "big red dog"}, {"a": ["red dog"]})
        # P = 2/3, R = 1, F1 = 0.8
        self.assertAlmostEqual(scores["f1"], 80.0)
        self.assertEqual(scores["exact_match"], 0.0)

    def test_bad_input(self):
        with self.assertRaisesRegex(ValueError, "no reference"):
            squad_scores({}, {})
        with self.assertRaisesRegex(ValueError, "'q1' has no reference"):
            squad_scores({"q1": "x"}, {"q1": []})
