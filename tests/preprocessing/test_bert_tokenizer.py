import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.preprocessing import BertTokenizer
from tests.preprocessing import parity_data
from tests.test_case import TestCase
from tests.test_case import to_numpy

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
# id:        5      6     7      8      9    10    11     12      13
WORDS = ["the", "qu", "##ick", "fox", ".", "un", "##aff", "##able", "cafe",
         # 14    15    16   17    18    19     20     21    22
         "東", "京", "$", "a", "##a", "The", "café", "é", "##é"]
VOCABULARY = SPECIALS + WORDS


def ids(*tokens):
    return [VOCABULARY.index(t) for t in tokens]


class BertTokenizerTest(TestCase):
    def test_wordpiece_lowercase_and_punctuation(self):
        tokenizer = BertTokenizer(VOCABULARY)
        self.assertEqual(
            to_numpy(tokenizer("The quick fox.")).tolist(),
            ids("the", "qu", "##ick", "fox", "."),
        )
        # Greedy longest match; a word with an uncovered piece is one [UNK].
        self.assertEqual(to_numpy(tokenizer(["unaffable", "unaffx"])),
                         [ids("un", "##aff", "##able"), ids("[UNK]")])

    def test_cased_keeps_case_and_accents(self):
        tokenizer = BertTokenizer(VOCABULARY, lowercase=False)
        self.assertEqual(to_numpy(tokenizer(["The", "the", "café"])),
                         [ids("The"), ids("the"), ids("café")])

    def test_accent_stripping_follows_lowercase_unless_set(self):
        self.assertEqual(to_numpy(BertTokenizer(VOCABULARY)("CAFÉ")).tolist(),
                         ids("cafe"))
        keep = BertTokenizer(VOCABULARY, strip_accents=False)
        self.assertEqual(to_numpy(keep("CAFÉ")).tolist(), ids("café"))
        strip = BertTokenizer(VOCABULARY, lowercase=False, strip_accents=True)
        self.assertEqual(to_numpy(strip("café")).tolist(), ids("cafe"))

    def test_cjk_symbols_and_invisible_characters(self):
        tokenizer = BertTokenizer(VOCABULARY)
        self.assertEqual(to_numpy(tokenizer("東京")).tolist(), ids("東", "京"))
        self.assertEqual(to_numpy(tokenizer("a$a")).tolist(),
                         ids("a", "$", "a"))
        # Zero-width space, soft hyphen, BOM and control chars are dropped;
        # unusual whitespace separates words.
        self.assertEqual(
            to_numpy(tokenizer(["c\u200ba\u00adf\ufeffe\x07", "a\u3000a\u2028a"])),
            [ids("cafe"), ids("a", "a", "a")],
        )

    def test_word_length_limit_counts_characters(self):
        tokenizer = BertTokenizer(VOCABULARY)
        self.assertEqual(to_numpy(tokenizer("a" * 100)).tolist(),
                         ids("a") + ids("##a") * 99)
        self.assertEqual(to_numpy(tokenizer("a" * 101)).tolist(), ids("[UNK]"))
        # 60 characters but 120 UTF-8 bytes: still under the limit.
        cased = BertTokenizer(VOCABULARY, lowercase=False)
        self.assertEqual(to_numpy(cased("é" * 60)).tolist(),
                         ids("é") + ids("##é") * 59)
        short = BertTokenizer(VOCABULARY, max_input_chars_per_word=3)
        self.assertEqual(to_numpy(short(["aaa", "aaaa"])),
                         [ids("a", "##a", "##a"), ids("[UNK]")])

    def test_empty_whitespace_and_invalid_utf8(self):
        tokenizer = BertTokenizer(VOCABULARY)
        self.assertEqual(to_numpy(tokenizer(["", " \t\n "])), [[], []])
        self.assertEqual(to_numpy(tokenizer("")).tolist(), [])
        # Invalid bytes become U+FFFD, which BERT's cleaning drops.
        self.assertEqual(to_numpy(tokenizer([b"c\xffafe", b"\xc3"])),
                         [ids("cafe"), []])

    def test_special_tokens_in_strings(self):
        text = "the [MASK] fox [mask]"
        plain = BertTokenizer(VOCABULARY)
        self.assertEqual(to_numpy(plain(text)).tolist(), ids(
            "the", "[UNK]", "[UNK]", "[UNK]", "fox", "[UNK]", "[UNK]", "[UNK]"))
        special = BertTokenizer(VOCABULARY, special_tokens_in_strings=True)
        # Matched in the raw text, case-sensitively, as in BertTokenizerFast.
        self.assertEqual(to_numpy(special(text)).tolist(), ids(
            "the", "[MASK]", "fox", "[UNK]", "[UNK]", "[UNK]"))
        token_ids, starts, ends = special.tokenize_with_offsets(text)
        self.assertEqual(to_numpy(token_ids).tolist(),
                         to_numpy(special(text)).tolist())
        self.assertEqual(text[int(starts[1]):int(ends[1])], "[MASK]")

    def test_offsets_index_the_original_python_string(self):
        tokenizer = BertTokenizer(VOCABULARY)
        text = "\x07Thé\u200b quick  東京, UNAFFABLE!"
        token_ids, starts, ends = tokenizer.tokenize_with_offsets(text)
        spans = [text[s:e] for s, e in zip(to_numpy(starts), to_numpy(ends))]
        self.assertEqual(to_numpy(token_ids).tolist(), to_numpy(
            tokenizer(text)).tolist())
        # A dropped character at a word edge is outside the span, as in HF.
        self.assertEqual(spans, ["Thé", "qu", "ick", "東", "京", ",",
                                 "UN", "AFF", "ABLE", "!"])
        batch = tokenizer.tokenize_with_offsets(["", "a" * 101 + " a"])
        self.assertEqual(to_numpy(batch[1]), [[], [0, 102]])
        self.assertEqual(to_numpy(batch[2]), [[], [101, 103]])

    def test_detokenize(self):
        tokenizer = BertTokenizer(VOCABULARY)
        self.assertEqual(tokenizer.detokenize(ids("the", "qu", "##ick")),
                         "the quick")
        self.assertEqual(
            tokenizer.detokenize([ids("un", "##aff", "##able", "[PAD]"),
                                  ids("fox", ".", "[PAD]", "[PAD]")]),
            ["unaffable", "fox ."],
        )
        with self.assertRaisesRegex(ValueError, "token ids must be in"):
            tokenizer.detokenize([5, 999])

        @tf.function
        def graph_detokenize(x):
            return tokenizer.detokenize(x)

        with self.assertRaises(tf.errors.InvalidArgumentError):
            graph_detokenize(tf.constant([[5, -1]]))

    def test_vocabulary_lookups_and_special_ids(self):
        tokenizer = BertTokenizer(VOCABULARY)
        self.assertEqual(tokenizer.vocabulary_size(), len(VOCABULARY))
        self.assertEqual(tokenizer.get_vocabulary(), VOCABULARY)
        self.assertEqual(tokenizer.token_to_id("fox"), 8)
        self.assertEqual(tokenizer.id_to_token(8), "fox")
        self.assertEqual(
            [tokenizer.pad_token_id, tokenizer.unk_token_id,
             tokenizer.cls_token_id, tokenizer.sep_token_id,
             tokenizer.mask_token_id], [0, 1, 2, 3, 4])
        with self.assertRaisesRegex(ValueError, "not in the vocabulary"):
            tokenizer.token_to_id("zebra")
        with self.assertRaisesRegex(ValueError, "out of range"):
            tokenizer.id_to_token(len(VOCABULARY))

    def test_bad_vocabularies(self):
        with self.assertRaisesRegex(FileNotFoundError, "no_such_vocab.txt"):
            BertTokenizer("/tmp/no_such_vocab.txt")
        with self.assertRaisesRegex(ValueError, "empty"):
            BertTokenizer([])
        empty = os.path.join(self.get_temp_dir(), "vocab.txt")
        open(empty, "w").close()
        with self.assertRaisesRegex(ValueError, "empty"):
            BertTokenizer(empty)
        with self.assertRaisesRegex(ValueError, "'fox' appears twice"):
            BertTokenizer(VOCABULARY + ["fox"])
        with self.assertRaisesRegex(ValueError, r"\[MASK\]"):
            BertTokenizer(SPECIALS[:4] + WORDS)
        with self.assertRaisesRegex(ValueError, "line 6"):
            BertTokenizer(SPECIALS + [""] + WORDS)

    def test_bad_inputs(self):
        tokenizer = BertTokenizer(VOCABULARY)
        for bad in (5, [1, 2], np.zeros(3)):
            with self.assertRaisesRegex(TypeError, "takes strings"):
                tokenizer(bad)
        with self.assertRaisesRegex(TypeError, "mixing"):
            tokenizer(["a", 1])
        with self.assertRaisesRegex(TypeError, "NoneType"):
            tokenizer(None)
        with self.assertRaisesRegex(ValueError, "shape"):
            tokenizer([["a", "b"]])

    def test_eager_and_tf_data(self):
        # Ragged outputs: the shared `run_preprocessing_layer_test` merges
        # dense batches only, so the same checks are spelled out here.
        tokenizer = BertTokenizer(VOCABULARY)
        texts = ["The quick fox.", "unaffable", "", "東京 $"]
        expected = [ids("the", "qu", "##ick", "fox", "."),
                    ids("un", "##aff", "##able"), [], ids("東", "京", "$")]
        self.assertEqual(to_numpy(tokenizer(texts)), expected)
        dataset = tf.data.Dataset.from_tensor_slices(texts)
        batched = dataset.batch(3).map(tokenizer)
        self.assertEqual(sum((to_numpy(x) for x in batched), []), expected)
        self.assertEqual([x.numpy().tolist() for x in dataset.map(tokenizer)],
                         expected)
        offsets = dataset.batch(4).map(tokenizer.tokenize_with_offsets)
        self.assertEqual(to_numpy(next(iter(offsets))),
                         to_numpy(tokenizer.tokenize_with_offsets(texts)))
        revived = BertTokenizer.from_config(tokenizer.get_config())
        self.assertEqual(to_numpy(revived(texts)), expected)

    def test_saved_model(self):
        tokenizer = BertTokenizer(VOCABULARY)
        module = tf.Module()
        module.tokenize = tf.function(
            lambda x: tokenizer(x).to_tensor(),
            input_signature=[tf.TensorSpec([None], tf.string)],
        )
        path = os.path.join(self.get_temp_dir(), "saved")
        tf.saved_model.save(module, path)
        restored = tf.saved_model.load(path)
        texts = tf.constant(["The quick fox.", "unaffable"])
        self.assertAllClose(restored.tokenize(texts),
                            tokenizer(texts).to_tensor())

    def test_serialization(self):
        tokenizer = BertTokenizer(VOCABULARY, lowercase=False,
                                  special_tokens_in_strings=True,
                                  model_max_length=64)
        revived = self.run_serialization_test(tokenizer)
        self.assertEqual(to_numpy(revived("The [MASK]")).tolist(),
                         to_numpy(tokenizer("The [MASK]")).tolist())


class BertTokenizerPresetTest(TestCase):
    def test_save_and_load_round_trip(self):
        directory = os.path.join(self.get_temp_dir(), "preset")
        tokenizer = BertTokenizer(VOCABULARY, lowercase=False,
                                  strip_accents=True, model_max_length=128)
        tokenizer.save_to_preset(directory)
        with open(os.path.join(directory, "tokenizer_config.json")) as f:
            config = json.load(f)
        self.assertEqual(config["tokenizer_class"], "BertTokenizer")
        self.assertEqual(config["do_lower_case"], False)
        self.assertEqual(config["strip_accents"], True)
        self.assertEqual(config["model_max_length"], 128)
        self.assertEqual(config["mask_token"], "[MASK]")
        restored = BertTokenizer.from_preset(directory).get_config()
        expected = tokenizer.get_config()
        restored.pop("name"), expected.pop("name")
        self.assertEqual(restored, expected)

    def test_transformers_reads_our_preset(self):
        import transformers

        directory = os.path.join(self.get_temp_dir(), "preset")
        tokenizer = BertTokenizer(VOCABULARY)
        tokenizer.save_to_preset(directory)
        reference = transformers.BertTokenizerFast.from_pretrained(directory)
        texts = ["The quick fox.", "CAFÉ unaffable 東京"]
        self.assertEqual(
            reference(texts, add_special_tokens=False)["input_ids"],
            to_numpy(tokenizer(texts)))

    def test_google_checkpoint_directory_infers_casing(self):
        for lowercase in (True, False):
            directory = os.path.join(self.get_temp_dir(), str(lowercase))
            os.makedirs(directory)
            words = WORDS if not lowercase else [
                w for w in WORDS if w == w.lower()]
            with open(os.path.join(directory, "vocab.txt"), "w") as f:
                f.write("\n".join(SPECIALS + words) + "\n")
            with open(os.path.join(directory, "bert_config.json"), "w") as f:
                json.dump({"max_position_embeddings": 256}, f)
            tokenizer = BertTokenizer.from_preset(directory)
            self.assertEqual(tokenizer.lowercase, lowercase)
            self.assertEqual(tokenizer.model_max_length, 256)

    def test_tokenizer_json_only_directory(self):
        directory = self.get_temp_dir()
        minilm = os.path.dirname(parity_data.MINILM_VOCABULARY)
        shutil.copy(os.path.join(minilm, "tokenizer.json"), directory)
        tokenizer = BertTokenizer.from_preset(directory)
        self.assertTrue(tokenizer.lowercase)
        self.assertEqual(tokenizer.vocabulary_size(), 30522)
        self.assertEqual(tokenizer.token_to_id("hello"), 7592)

    def test_bad_preset_directories(self):
        from keras_bert.checkpoints import CheckpointError

        with self.assertRaisesRegex(CheckpointError,
                                    "'/tmp/no/such/preset': no such directory"):
            BertTokenizer.from_preset("/tmp/no/such/preset")
        with self.assertRaisesRegex(FileNotFoundError, "No vocab.txt"):
            BertTokenizer.from_preset(self.get_temp_dir())

    @pytest.mark.large
    def test_minilm_directory(self):
        directory = os.path.dirname(parity_data.MINILM_VOCABULARY)
        tokenizer = BertTokenizer.from_preset(directory)
        self.assertTrue(tokenizer.lowercase)
        self.assertEqual(tokenizer.model_max_length, 512)
        self.assertEqual(tokenizer.cls_token_id, 101)
