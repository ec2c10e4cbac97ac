import os
import random
import zlib

from keras_bert.preprocessing.text_documents import split_sentences

CORPUS_FORMATS = ("auto", "sentences", "paragraphs")


class TextCorpus:
    """Raw-text pretraining files, streamed as documents of sentences.

    Two layouts are read:

    - "sentences", the original BERT format: one sentence per line, a
      blank line between documents.
    - "paragraphs", plain prose: blank lines separate paragraphs; a
      paragraph's lines are joined (hard-wrapped text) and split into
      sentences. A file is cut into documents of whole paragraphs, each
      closed at the first paragraph end after `paragraph_document_sentences`
      sentences. A book as one document would leave next-sentence
      prediction a handful of documents to draw random B segments from
      and the pair stream one book at a time; BERT's documents were
      Wikipedia articles.

    "auto" picks per file from its first lines (see `detect_format`).
    Files are read lazily, one document at a time, so corpora larger
    than memory stream through.

    A deterministic held-out split: every document is cut into pieces of
    `heldout_piece_sentences` sentences, and a piece goes to the held-out
    side when a hash of its text falls below `heldout_fraction`. Each run
    of consecutive pieces on one side is a document of that split, so
    an "is next" pair never joins text that the split took apart.

    Args:
        paths: list of str. Text files (UTF-8).
        corpus_format: str. "auto", "sentences" or "paragraphs".
        heldout_fraction: float. Share of text held out for evaluation.
        heldout_piece_sentences: int. Size of the held-out units.
        paragraph_document_sentences: int. Least sentences of a document
            cut from a "paragraphs" file (its last one may have fewer).

    Example:
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "a.txt")
    >>> _ = open(path, "w").write("First one.\\nSecond one.\\n\\nOther doc.\\n")
    >>> list(TextCorpus([path], heldout_fraction=0).documents())
    [['First one.', 'Second one.'], ['Other doc.']]
    """

    def __init__(
        self,
        paths,
        corpus_format="auto",
        heldout_fraction=0.0,
        heldout_piece_sentences=100,
        paragraph_document_sentences=50,
    ):
        if corpus_format not in CORPUS_FORMATS:
            raise ValueError(
                f"Unknown corpus_format {corpus_format!r}; use one of "
                f"{CORPUS_FORMATS}."
            )
        if not paths:
            raise ValueError(
                "The corpus is empty: no files were given. Pass text files "
                "with --corpus, or omit it to use the built-in Python docs."
            )
        for path in paths:
            if not os.path.isfile(path):
                raise FileNotFoundError(f"Corpus file not found: {path}")
        self.paths = list(paths)
        self.corpus_format = corpus_format
        self.heldout_fraction = heldout_fraction
        self.heldout_piece_sentences = heldout_piece_sentences
        self.paragraph_document_sentences = paragraph_document_sentences

    def file_format(self, path):
        """The layout used for `path` ("sentences" or "paragraphs")."""
        if self.corpus_format != "auto":
            return self.corpus_format
        return detect_format(path)

    def documents(self, split="train", shuffle_seed=None):
        """Yields documents (lists of sentences) of one split.

        Args:
            split: "train", "heldout" or "all".
            shuffle_seed: int or None. Shuffle the file order with it.
        """
        if split not in ("train", "heldout", "all"):
            raise ValueError(f"Unknown split {split!r}.")
        paths = list(self.paths)
        if shuffle_seed is not None:
            random.Random(shuffle_seed).shuffle(paths)
        for path in paths:
            for document in self._read_file(path):
                if split == "all":
                    yield document
                    continue
                yield from self._split(document, split == "heldout")

    def check(self, require_pairs=False):
        """Reads every file once; raises on a file with no sentences.

        Args:
            require_pairs: bool. Also raise on a file whose documents all
                have a single sentence: next-sentence prediction can draw
                no "is next" pair from it (a sentence-per-line file with a
                blank line after every sentence, say).

        Returns:
            dict: the number of documents, sentences and whitespace words.
        """
        stats = {"documents": 0, "sentences": 0, "words": 0}
        for path in self.paths:
            sentences = multi_sentence = 0
            first_single = None
            for line, document in self._read_numbered(path):
                stats["documents"] += 1
                sentences += len(document)
                stats["words"] += sum(len(s.split()) for s in document)
                if len(document) > 1:
                    multi_sentence += 1
                elif first_single is None:
                    first_single = line
            if sentences == 0:
                raise ValueError(
                    f"Corpus file {path} contains no sentences (it is empty "
                    "or only whitespace). Remove it from --corpus."
                )
            if require_pairs and not multi_sentence:
                raise ValueError(
                    f"Corpus file {path}: every document has one sentence "
                    f"(the first at line {first_single}), so next-sentence "
                    "prediction has no pairs to learn from. A blank line "
                    "ends a document: keep a document's sentences on "
                    "consecutive lines, or pass --no-nsp."
                )
            stats["sentences"] += sentences
        return stats

    def _split(self, document, heldout):
        """The runs of consecutive pieces of `document` on one side."""
        size = self.heldout_piece_sentences
        run = []
        for start in range(0, len(document), size):
            piece = document[start:start + size]
            digest = zlib.crc32("\n".join(piece).encode("utf-8"))
            in_heldout = digest % 10_000 < self.heldout_fraction * 10_000
            if in_heldout == heldout:
                run.extend(piece)
            elif run:
                yield run
                run = []
        if run:
            yield run

    def _read_file(self, path):
        for _, document in self._read_numbered(path):
            yield document

    def _read_numbered(self, path):
        """Yields `(first line number, document)` pairs of one file."""
        if self.file_format(path) == "sentences":
            yield from _read_sentences_file(path)
        else:
            sentences, start = [], None
            for number, paragraph in _read_paragraphs(path):
                sentences.extend(split_sentences(paragraph))
                start = start or number
                if len(sentences) >= self.paragraph_document_sentences:
                    yield start, sentences
                    sentences, start = [], None
            if sentences:
                yield start, sentences


def detect_format(path, num_lines=200):
    """Guesses a file's layout from its first non-empty lines.

    "sentences" (the original BERT format) when most lines end like a
    sentence and nearly none holds two sentences; "paragraphs" for
    hard-wrapped prose (lines end mid-sentence) or a paragraph per line.
    """
    lines = []
    for _, line in _numbered_lines(path):
        if line.strip():
            lines.append(line.strip())
        if len(lines) == num_lines:
            break
    if not lines:
        return "sentences"
    ends = sum(1 for line in lines if line[-1] in ".!?:;\"'\u201d)")
    single = sum(1 for line in lines if len(split_sentences(line)) == 1)
    if ends >= 0.6 * len(lines) and single >= 0.9 * len(lines):
        return "sentences"
    return "paragraphs"


def _numbered_lines(path):
    # Decode line by line so a bad byte is reported with its line number.
    with open(path, "rb") as file:
        for number, raw in enumerate(file, start=1):
            try:
                yield number, raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise ValueError(
                    f"{path}, line {number}: not valid UTF-8 ({error.reason} "
                    f"at byte {error.start}). Convert the file to UTF-8, "
                    f"e.g. `iconv -f latin1 -t utf-8`."
                ) from None


def _read_sentences_file(path):
    document, start = [], None
    for number, line in _numbered_lines(path):
        line = line.strip()
        if line:
            document.append(line)
            start = start or number
        elif document:
            yield start, document
            document, start = [], None
    if document:
        yield start, document


def _read_paragraphs(path):
    """Yields `(first line number, paragraph text)` pairs of one file."""
    lines, start = [], None
    for number, line in _numbered_lines(path):
        if line.strip():
            lines.append(line)
            start = start or number
        elif lines:
            yield start, " ".join(lines)
            lines, start = [], None
    if lines:
        yield start, " ".join(lines)
