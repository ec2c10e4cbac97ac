"""Token ids and offsets against `transformers`' BertTokenizerFast (MiniLM).

A sample of each dataset here; `bench/bench_tokenizer.py --parity` runs all
of it (results in docs/preprocessing.md).
"""

import pytest

from keras_bert.preprocessing import BertTokenizer
from tests.preprocessing import parity_data
from tests.test_case import TestCase
from tests.test_case import to_numpy


def encode(reference, texts):
    encoded = reference(texts, add_special_tokens=False,
                        return_offsets_mapping=True)
    offsets = [[tuple(o) for o in row] for row in encoded["offset_mapping"]]
    return encoded["input_ids"], offsets


def ours(tokenizer, texts):
    token_ids, starts, ends = tokenizer.tokenize_with_offsets(texts)
    offsets = [list(zip(s, e)) for s, e in zip(to_numpy(starts),
                                               to_numpy(ends))]
    return to_numpy(tokenizer(texts)), to_numpy(token_ids), offsets


@pytest.mark.large
class TokenizerParityTest(TestCase):
    @classmethod
    def setUpClass(cls):
        cls.reference = parity_data.reference_tokenizer()
        cls.tokenizer = BertTokenizer(parity_data.MINILM_VOCABULARY)

    def test_dataset_sample(self):
        for name, texts in parity_data.dataset_texts(200).items():
            expected_ids, expected_offsets = encode(self.reference, texts)
            ids, offset_ids, offsets = ours(self.tokenizer, texts)
            same = sum(a == b for a, b in zip(ids, expected_ids))
            # The full run is 100%; the goal is 99.9%.
            self.assertGreaterEqual(same / len(texts), 0.999, msg=name)
            self.assertEqual(offset_ids, ids, msg=name)
            same = sum(a == b for a, b in zip(offsets, expected_offsets))
            self.assertGreaterEqual(same / len(texts), 0.999, msg=name)

    def test_hard_strings(self):
        texts = parity_data.HARD_STRINGS
        expected_ids, expected_offsets = encode(self.reference, texts)
        special = BertTokenizer(parity_data.MINILM_VOCABULARY,
                                special_tokens_in_strings=True)
        ids, offset_ids, offsets = ours(special, texts)
        for i, text in enumerate(texts):
            self.assertEqual(ids[i], expected_ids[i], msg=repr(text))
            self.assertEqual(offset_ids[i], ids[i], msg=repr(text))
            self.assertEqual(offsets[i], expected_offsets[i], msg=repr(text))
        # The default treats "[MASK]" in text as plain text: the only
        # documented difference.
        plain = to_numpy(self.tokenizer(texts))
        differ = [t for t, a, b in zip(texts, plain, expected_ids) if a != b]
        self.assertEqual(differ, ["hello [MASK] world [SEP] [CLS]"])

    def test_packed_pairs_with_truncation(self):
        from keras_bert.preprocessing import BertPreprocessor

        texts = parity_data.dataset_texts(64)["MRPC"]
        first, second = texts[0::2], texts[1::2]
        layer = BertPreprocessor(self.tokenizer, sequence_length=24)
        packed = to_numpy(layer((first, second)))
        expected = self.reference(first, second, truncation=True,
                                  max_length=24, padding="max_length")
        self.assertEqual(packed["token_ids"].tolist(), expected["input_ids"])
        self.assertEqual(packed["segment_ids"].tolist(),
                         expected["token_type_ids"])
        self.assertEqual(packed["padding_mask"].tolist(),
                         expected["attention_mask"])
