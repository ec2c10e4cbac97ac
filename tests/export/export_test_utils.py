"""Shared pieces of the export tests: real text, a small vocabulary built
from it, tiny models, and a fresh TensorFlow-only serving process."""

import collections
import functools
import os
import pickle
import re
import subprocess
import sys
import tempfile

import numpy as np

DATA = "/work/shared/data"
CLIENT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      "serving_client.py")
SEQUENCE_LENGTH = 32


def _lines(path, count, skip_header=True):
    with open(path, encoding="utf-8-sig") as f:
        rows = f.read().splitlines()[1 if skip_header else 0:]
    return [row.split("\t") for row in rows[:count]]


@functools.lru_cache(None)
def sst2_sentences(count=16):
    return tuple(row[0] for row in _lines(f"{DATA}/sst2/dev.tsv", count))


@functools.lru_cache(None)
def mrpc_pairs(count=8):
    rows = _lines(f"{DATA}/mrpc/dev.tsv", count)
    return tuple(row[3] for row in rows), tuple(row[4] for row in rows)


@functools.lru_cache(None)
def squad_examples(count=6):
    from keras_bert.preprocessing.tasks import read_squad

    examples = read_squad(f"{DATA}/squad/dev-v1.1.json")[:count]
    return (tuple(e["question"] for e in examples),
            tuple(e["context"] for e in examples))


@functools.lru_cache(None)
def conll_sentences(count=8):
    from keras_bert.preprocessing.tasks import read_conll

    words = read_conll(f"{DATA}/conll2003/valid.txt")["words"]
    return tuple(tuple(sentence) for sentence in words[:count])


@functools.lru_cache(None)
def vocabulary(size=400):
    """Special tokens, every character (also as `##` piece) and the most
    frequent words of the test texts: every text tokenizes, mostly into
    whole words."""
    texts = list(sst2_sentences()) + [t for pair in mrpc_pairs() for t in pair]
    texts += [t for part in squad_examples() for t in part]
    texts += [" ".join(words) for words in conll_sentences()]
    words = [w for t in texts for w in re.findall(r"\w+|[^\w\s]", t.lower())]
    chars = sorted({c for w in words for c in w})
    common = [w for w, _ in collections.Counter(words).most_common(size)
              if w not in chars]
    return (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + chars
            + ["##" + c for c in chars] + common)


def tokenizer():
    from keras_bert.preprocessing import BertTokenizer

    return BertTokenizer(list(vocabulary()))


def tiny_backbone():
    import keras_bert

    return keras_bert.BertBackbone(
        vocabulary_size=len(vocabulary()), num_layers=2, num_heads=2,
        hidden_dim=16, intermediate_dim=32, max_sequence_length=64,
        dropout=0.0, initializer_range=0.2,
    )


def serve(jobs, without_keras=False):
    """Runs `{job: (dir, signature, inputs)}` in a fresh TF-only process.

    Returns `{job: {output: np.ndarray}}` and, under "__modules__", which
    keras_bert modules the process imported (none, or loading needed
    keras_bert).
    """
    with tempfile.TemporaryDirectory() as directory:
        jobs_file = os.path.join(directory, "jobs.pkl")
        outputs_file = os.path.join(directory, "outputs.pkl")
        with open(jobs_file, "wb") as f:
            pickle.dump(jobs, f)
        command = [sys.executable, CLIENT, jobs_file, outputs_file]
        if without_keras:
            command.append("--without-keras")
        # Run from the temporary directory so the project is not on sys.path.
        result = subprocess.run(
            command, cwd=directory, capture_output=True, text=True,
            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"), timeout=300,
        )
        if result.returncode != 0:
            raise AssertionError(f"serving process failed:\n"
                                 f"{result.stderr[-4000:]}")
        with open(outputs_file, "rb") as f:
            return pickle.load(f)


def strings(values):
    """A NumPy array of UTF-8 bytes (str items are encoded)."""
    return np.array([v.encode("utf-8") if isinstance(v, str) else v
                     for v in values], dtype=object)
