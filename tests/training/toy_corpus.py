"""A small, learnable corpus for pretraining tests.

Sentences walk a ring of made-up words in order ("w3 w4 w5 w6 ."), so a
masked word is predictable from its neighbours and a model that learns
anything beats the unigram baseline quickly.
"""

import os

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = [f"w{i}" for i in range(24)]


def toy_vocabulary():
    return SPECIAL_TOKENS + [".", "##x"] + WORDS


def toy_documents(num_documents=10, sentences_per_document=6, words=5):
    documents = []
    for d in range(num_documents):
        document = []
        for s in range(sentences_per_document):
            start = (7 * d + words * s) % len(WORDS)
            picked = [WORDS[(start + k) % len(WORDS)] for k in range(words)]
            document.append(" ".join(picked) + " .")
        documents.append(document)
    return documents


def write_lines(path, lines):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as file:
        file.write("\n".join(lines) + "\n")
    return path


def write_toy_corpus(directory, name="toy.txt", **kwargs):
    """Writes the toy corpus in the original layout; returns its path."""
    lines = []
    for document in toy_documents(**kwargs):
        lines += document + [""]
    return write_lines(os.path.join(directory, name), lines)


def write_toy_vocabulary(directory):
    return write_lines(os.path.join(directory, "vocab.txt"), toy_vocabulary())
