from unittest import mock

import numpy as np

from keras_bert.models import shared_rows
from tests.models.test_bert_text_embedder import embedder
from tests.test_case import TestCase
from tests.test_case import skip_unless_backend

# Lengths (with [CLS] and [SEP]) from 2 (the empty string) to 12.
TEXTS = ["", "cat", "the cat sat on a mat", "a dog ran", "the fish swam",
         "a bird flew on the mat", "who", "the cat sat on a mat the dog ran",
         "what flew", "fish"] * 5


class PlanRowsTest(TestCase):
    def test_every_text_once_and_rows_within_their_limits(self):
        lengths = np.random.default_rng(0).integers(2, 61, 500)
        rows = shared_rows.plan_rows(lengths, 64, max_texts=16)
        placed = sorted(i for row in rows for i in row)
        self.assertEqual(placed, list(range(500)))
        self.assertLessEqual(max(sum(lengths[row]) for row in rows), 64)
        self.assertLessEqual(max(len(row) for row in rows), 16)
        self.assertGreater(lengths.sum() / (64 * len(rows)), 0.9)

    def test_rows_of_sentence_like_lengths_are_nearly_full(self):
        # Many short texts, few long (as sentences are): best fit fills
        # within a row of the bound; longest-then-shortest left ~8% empty.
        for seed in range(3):
            rng = np.random.default_rng(seed)
            lengths = np.minimum(2 + rng.geometric(1 / 12, 500), 60)
            rows = shared_rows.plan_rows(lengths, 64)
            self.assertLessEqual(len(rows),
                                 int(np.ceil(lengths.sum() / 64)) + 1)

    def test_row_inputs_restart_positions_and_number_the_texts(self):
        token_ids = np.array([[2, 7, 3, 0], [2, 3, 0, 0], [2, 8, 9, 3]])
        x = shared_rows.row_inputs(token_ids, np.array([3, 2, 4]),
                                   [[2, 1], [0]], row_length=8)
        self.assertEqual(x["token_ids"].tolist(),
                         [[2, 8, 9, 3, 2, 3, 0, 0], [2, 7, 3, 0, 0, 0, 0, 0]])
        self.assertEqual(x["position_ids"][0].tolist(),
                         [0, 1, 2, 3, 0, 1, 0, 0])
        self.assertEqual(x["text_numbers"].tolist(),
                         [[1, 1, 1, 1, 2, 2, 0, 0], [1, 1, 1, 0, 0, 0, 0, 0]])


class SharedRowEncodeTest(TestCase):
    def test_each_text_gets_the_vector_it_gets_alone(self):
        for pooling in ("mean", "cls", "max"):
            model = embedder(pooling=pooling)
            alone = model.encode(TEXTS, batch_size=8, verbose=0,
                                 share_rows=False)
            shared = model.encode(TEXTS, batch_size=8, verbose=0)
            self.assertAllClose(shared, alone, atol=1e-5)

    @skip_unless_backend("torch")
    def test_a_quantized_model_takes_its_int8_kernels_in_shared_rows(self):
        # The rows run the backbone's layers outside its call, so they
        # enter keras_bert's int8 kernels themselves.
        from unittest import mock

        from keras_bert import torch_int8

        model = embedder()
        model.quantize("int8")
        alone = model.encode(TEXTS, batch_size=8, verbose=0,
                             share_rows=False)
        with mock.patch.object(torch_int8, "_int8_gemm",
                               wraps=torch_int8._int8_gemm) as gemm:
            shared = model.encode(TEXTS, batch_size=8, verbose=0)
        self.assertGreater(gemm.call_count, 0)
        self.assertAllClose(shared, alone, atol=1e-5)

    def test_calls_hold_whole_rows_in_power_of_two_counts(self):
        model = embedder()
        calls = []
        predict = shared_rows.predict_batch

        def recording(model, x, count):
            calls.append(x["text_numbers"])
            return predict(model, x, count)

        with mock.patch.object(shared_rows, "predict_batch", recording):
            model.encode(TEXTS, batch_size=16, verbose=0)
        # 50 texts of about 5 tokens: 4-5 rows of 64.
        sizes = [len(numbers) for numbers in calls]
        self.assertTrue(all(size & (size - 1) == 0 for size in sizes), sizes)
        self.assertEqual(sorted(sizes, reverse=True), sizes)
        texts = sum(len(np.unique(row[row > 0])) for numbers in calls
                    for row in numbers)
        self.assertEqual(texts, len(TEXTS))
        # No call runs a row without a text.
        self.assertTrue(all((numbers == 1).any(axis=1).all()
                            for numbers in calls))
