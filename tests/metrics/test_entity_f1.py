from keras_bert.metrics import entity_scores
from keras_bert.metrics import get_entities
from tests.test_case import TestCase


class EntityF1Test(TestCase):
    def test_iob2_chunks(self):
        tags = ["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "I-LOC", "O",
                "B-ORG"]
        self.assertEqual(
            get_entities(tags),
            [("PER", 0, 2), ("LOC", 3, 4), ("LOC", 4, 6), ("ORG", 7, 8)],
        )

    def test_iob1_chunks_read_like_conlleval(self):
        # IOB1 (original CoNLL-2003): I- starts an entity after O or after
        # another type; B- only splits two adjacent entities of one type.
        tags = ["I-ORG", "I-ORG", "I-PER", "O", "I-LOC", "B-LOC", "I-MISC"]
        self.assertEqual(
            get_entities(tags),
            [("ORG", 0, 2), ("PER", 2, 3), ("LOC", 4, 5), ("LOC", 5, 6),
             ("MISC", 6, 7)],
        )

    def test_iob1_and_iob2_of_the_same_sentence_agree(self):
        iob1 = ["I-PER", "I-PER", "O", "I-LOC", "B-LOC", "O"]
        iob2 = ["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "O"]
        self.assertEqual(get_entities(iob1), get_entities(iob2))

    def test_exact_span_scores_by_hand(self):
        references = [["B-PER", "I-PER", "O", "B-LOC"],
                      ["B-ORG", "O", "B-MISC", "I-MISC"]]
        predictions = [["B-PER", "I-PER", "O", "B-ORG"],  # PER right, LOC->ORG
                       ["B-ORG", "O", "B-MISC", "O"]]  # ORG right, MISC short
        scores = entity_scores(references, predictions)
        # 4 reference entities, 4 predicted, 2 exact: P = R = F1 = 50.
        self.assertEqual((scores["num_reference"], scores["num_predicted"],
                          scores["num_correct"]), (4, 4, 2))
        self.assertAlmostEqual(scores["precision"], 50.0)
        self.assertAlmostEqual(scores["recall"], 50.0)
        self.assertAlmostEqual(scores["f1"], 50.0)
        self.assertAlmostEqual(scores["per_type"]["PER"]["f1"], 100.0)
        self.assertAlmostEqual(scores["per_type"]["LOC"]["recall"], 0.0)
        self.assertAlmostEqual(scores["per_type"]["ORG"]["precision"], 50.0)
        self.assertEqual(scores["per_type"]["MISC"]["support"], 1)

    def test_unequal_precision_and_recall(self):
        scores = entity_scores([["B-PER", "O", "B-LOC"]],
                               [["B-PER", "O", "O"]])
        # P = 1/1, R = 1/2, F1 = 2/3.
        self.assertAlmostEqual(scores["f1"], 200 / 3)

    def test_bad_input(self):
        with self.assertRaisesRegex(ValueError, "'X-PER' at token 1"):
            get_entities(["O", "X-PER"])
        with self.assertRaisesRegex(ValueError, "2 reference sentences"):
            entity_scores([["O"], ["O"]], [["O"]])
        with self.assertRaisesRegex(ValueError, "sentence 0 has 2 reference"):
            entity_scores([["O", "O"]], [["O"]])
