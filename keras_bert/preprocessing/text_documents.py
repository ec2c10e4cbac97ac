"""Streaming readers that turn text files into documents of sentences.

A document is a list of sentences (strings). Files are read line by line, so
only one document is held in memory at a time.
"""

import os
import re

READ_MODES = ("sentence_per_line", "paragraphs")

# A sentence ends at . ! or ? (plus closing quotes/brackets) followed by
# whitespace and an uppercase letter, digit or opening quote.
_BOUNDARY = re.compile(r"[.!?]+[\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-Z0-9])")
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr st jr sr prof rev gen col capt lt sgt hon vs etc "
    "e.g i.e no vol fig inc ltd co mt ft".split()
)


def split_sentences(text):
    """Splits running text into sentences with a punctuation heuristic.

    A boundary is sentence-final punctuation followed by whitespace and a
    capitalized word, unless the punctuation ends a common abbreviation
    ("Mr.", "e.g.") or a single-letter initial ("J. Smith"). Good enough for
    building next-sentence pairs; not a linguistic sentence splitter.
    """
    text = " ".join(text.split())
    sentences, start = [], 0
    for match in _BOUNDARY.finditer(text):
        previous_word = text[start:match.start()].rsplit(" ", 1)[-1]
        stem = previous_word.lower().lstrip("\"'“‘([")
        if stem in _ABBREVIATIONS or (len(stem) == 1 and stem.isalpha()):
            continue
        sentences.append(text[start:match.end()].strip())
        start = match.end()
    if text[start:].strip():
        sentences.append(text[start:].strip())
    return sentences


def read_documents(paths, mode="sentence_per_line"):
    """Yields documents (lists of sentence strings) from text files.

    Args:
        paths: a path or a list of paths (UTF-8; undecodable bytes become
            U+FFFD).
        mode: `"sentence_per_line"`: the original BERT pretraining format, one
            sentence per line and a blank line between documents.
            `"paragraphs"`: a blank line between documents too, but the lines
            of a document are running text (hard-wrapped or one paragraph per
            line), split into sentences with `split_sentences`.

    The end of a file always ends a document; empty documents are skipped.
    """
    if mode not in READ_MODES:
        raise ValueError(f"`mode` must be one of {READ_MODES}; got {mode!r}.")
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    for path in paths:
        if not os.path.isfile(path):
            raise FileNotFoundError(f"Text file not found: '{path}'.")
    for path in paths:
        lines = []
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip()
                if line:
                    lines.append(line)
                elif lines:
                    yield _document(lines, mode)
                    lines = []
        if lines:
            yield _document(lines, mode)


def _document(lines, mode):
    if mode == "sentence_per_line":
        return lines
    return split_sentences(" ".join(lines))
