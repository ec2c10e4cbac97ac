import numpy as np

from keras_bert import BertQuestionAnswerer
from keras_bert.models.bert_question_answerer import span_exact_match
from keras_bert.models.bert_question_answerer import span_loss
from keras_bert.preprocessing import BertTokenizer
from keras_bert.preprocessing.tasks import BertQuestionAnswererPreprocessor
from tests.models.test_bert_classifier import packed
from tests.models.test_bert_classifier import tiny_backbone
from tests.test_case import TestCase
from tests.test_case import to_numpy

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "who", "sat",
              "the", "cat", "on", "mat", "?", "."]
START, END = 7, 8  # the toy answer runs from token 7 to token 8


def toy_spans(count=32, length=12, seed=0):
    """Windows whose answer starts at token 7 and ends at the next 8."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(10, 50, (count, length))
    ids[:, 0], ids[:, 3], ids[:, -1] = 2, 3, 3
    spans = []
    for row in ids:
        start = int(rng.integers(4, length - 3))
        end = int(rng.integers(start, length - 1))
        row[start], row[end] = START, END if end > start else START
        spans.append((start, end))
    return packed(ids, second_from=4), np.array(spans, "int32")


def answerer(preprocessor=None, vocabulary_size=50):
    return BertQuestionAnswerer(tiny_backbone(vocabulary_size),
                                preprocessor=preprocessor)


class BertQuestionAnswererTest(TestCase):
    def test_output_shape_serialization_and_saving(self):
        model = answerer()
        inputs, _ = toy_spans(count=2)
        self.assertEqual(tuple(model(inputs).shape), (2, 12, 2))
        revived = self.run_serialization_test(model)
        self.assertEqual(revived.dropout, 0.0)
        self.run_model_saving_test(model, inputs)

    def test_span_loss_is_the_mean_of_start_and_end_cross_entropy(self):
        rng = np.random.default_rng(0)
        logits = rng.normal(size=(2, 6, 2)).astype("float32")
        spans = np.array([[1, 2], [3, 3]])
        log_p = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
        rows = np.arange(2)
        expected = -(log_p[rows, spans[:, 0], 0]
                     + log_p[rows, spans[:, 1], 1]) / 2
        self.assertAllClose(to_numpy(span_loss(spans, logits)), expected,
                            atol=1e-5, rtol=1e-5)
        # Exact match needs both ends right.
        logits = np.zeros((2, 6, 2), "float32")
        logits[0, 1, 0] = logits[0, 2, 1] = 1.0  # start and end right
        logits[1, 3, 0] = logits[1, 4, 1] = 1.0  # end wrong
        self.assertEqual(to_numpy(span_exact_match(spans, logits)).tolist(),
                         [1.0, 0.0])

    def test_fit_learns_toy_spans(self):
        model = answerer()
        model.compile(learning_rate=1e-2, num_train_steps=None)
        inputs, spans = toy_spans()
        # The head reads the sequence output alone; TensorFlow's warning
        # that the pooler has no gradient is kept quiet.
        with self.assertNoWarningAbout("Gradients do not exist"):
            history = model.fit(inputs, spans, batch_size=8, epochs=6,
                                verbose=0)
        losses = history.history["loss"]
        self.assertLess(losses[-1], 0.3 * losses[0])
        self.assertGreater(history.history["span_exact_match"][-1], 0.5)

    def test_answer_returns_a_span_of_the_context(self):
        preprocessor = BertQuestionAnswererPreprocessor(
            BertTokenizer(VOCABULARY), sequence_length=12, doc_stride=2,
            max_query_length=4)
        model = answerer(preprocessor=preprocessor,
                         vocabulary_size=len(VOCABULARY))
        contexts = ["The cat sat on the mat.", "The mat sat. The cat sat."]
        answers = model.answer(["Who sat?", "Who sat on the mat?"], contexts,
                               verbose=0)
        self.assertEqual(len(answers), 2)
        for answer, context in zip(answers, contexts):
            self.assertTrue(answer["text"])
            self.assertEqual(context[answer["start"]:answer["end"]],
                             answer["text"])
