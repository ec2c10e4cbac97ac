import numpy as np

from keras_bert import BertMultipleChoice
from keras_bert.preprocessing import BertTokenizer
from keras_bert.preprocessing.tasks import BertMultipleChoicePreprocessor
from tests.models.test_bert_classifier import tiny_backbone
from tests.test_case import TestCase
from tests.test_case import to_numpy

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "he", "she",
              "ran", "sat", "flew", "swam", "away", "home"]
RIGHT = 7  # in the toy problem the right choice is the one with token 7


def toy_choices(count=32, num_choices=3, length=6, seed=0):
    """`(inputs, labels)`: random packed choices, one of them holds token 7."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(10, 50, (count, num_choices, length))
    ids[..., 0], ids[..., -1] = 2, 3
    labels = rng.integers(0, num_choices, count)
    ids[np.arange(count), labels, 2] = RIGHT
    return {"token_ids": ids.astype("int32"),
            "segment_ids": np.zeros_like(ids, "int32"),
            "padding_mask": np.ones_like(ids, "int32")}, labels


def chooser(num_choices=3, preprocessor=None, vocabulary_size=50):
    return BertMultipleChoice(tiny_backbone(vocabulary_size),
                              num_choices=num_choices, dropout=0.0,
                              preprocessor=preprocessor)


class BertMultipleChoiceTest(TestCase):
    def test_output_shape_serialization_and_saving(self):
        model = chooser(num_choices=4)
        inputs, _ = toy_choices(count=2, num_choices=4)
        self.assertEqual(tuple(model(inputs).shape), (2, 4))
        revived = self.run_serialization_test(model)
        self.assertEqual(revived.num_choices, 4)
        self.run_model_saving_test(model, inputs)

    def test_rejects_a_single_choice(self):
        with self.assertRaisesRegex(ValueError, "num_choices must be >= 2"):
            chooser(num_choices=1)

    def test_each_choice_is_scored_by_the_same_weights(self):
        model = chooser()
        inputs, _ = toy_choices(count=2)
        order = [2, 0, 1]
        shuffled = {k: v[:, order] for k, v in inputs.items()}
        self.assertAllClose(to_numpy(model(shuffled)),
                            to_numpy(model(inputs))[:, order], atol=1e-5)

    def test_fit_learns_toy_choices(self):
        model = chooser()
        model.compile(learning_rate=1e-2, num_train_steps=None)
        inputs, labels = toy_choices()
        history = model.fit(inputs, labels, batch_size=8, epochs=5,
                            verbose=0)
        losses = history.history["loss"]
        self.assertLess(losses[-1], 0.3 * losses[0])
        self.assertEqual(history.history["accuracy"][-1], 1.0)

    def test_predict_runs_the_preprocessor_on_strings(self):
        preprocessor = BertMultipleChoicePreprocessor(
            BertTokenizer(VOCABULARY), sequence_length=6)
        model = chooser(preprocessor=preprocessor,
                        vocabulary_size=len(VOCABULARY))
        x = (["He", "She ran"], [["ran away", "sat", "flew home"],
                                 ["home", "swam", "away"]])
        logits = model.predict(x, verbose=0)
        self.assertEqual(logits.shape, (2, 3))
        self.assertAllClose(logits, to_numpy(model(preprocessor(x))),
                            atol=1e-5)
