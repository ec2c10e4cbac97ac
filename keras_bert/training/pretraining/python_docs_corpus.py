"""The built-in pretraining corpus: documentation every Python already has.

Two sources ship with the interpreter: the language reference topics that
`help()` shows (`pydoc_data.topics`) and the docstrings of the standard
library's source files. The files are parsed with `ast`, never imported,
so nothing runs; the walk is sorted, so the same interpreter always gives
the same corpus.
"""

import ast
import os
import re
import sysconfig

from keras_bert.preprocessing.text_documents import split_sentences

# Standard-library folders that are tests, tools, vendored copies or
# generated codec tables.
_SKIPPED_DIRS = frozenset(
    "test tests idlelib lib2to3 turtledemo ensurepip site-packages "
    "dist-packages __pycache__ encodings".split()
)
# reST roles and markup: ":func:`len`" -> "len", "``x``" -> "x".
_ROLE = re.compile(r":[a-z:]+:`~?([^`<]*?)(?:\s*<[^>]*>)?`")
_MARKUP = re.compile(r"`+|\*\*|(?<!\w)\*(?=\w)|(?<=\w)\*(?!\w)")
_HEADING_UNDERLINE = re.compile(r"^([*=\-~^#])\1{3,}$")


def python_docs_documents(stdlib_root=None):
    """Returns the built-in corpus as a list of documents of sentences.

    One document per `pydoc_data` topic (in sorted topic order), then one
    per standard-library module (its module, class and function
    docstrings in source order, modules in sorted path order). Only prose
    is kept: code examples, grammar rules, indented blocks and headings
    are dropped.

    Args:
        stdlib_root: str or None. Folder of Python sources to read
            docstrings from; None is this interpreter's standard library.

    Example:
    >>> documents = python_docs_documents()
    >>> len(documents) > 100 and all(len(d) > 0 for d in documents)
    True
    """
    documents = []
    try:
        from pydoc_data.topics import topics
    except ImportError:
        topics = {}
    for name in sorted(topics):
        document = _prose_sentences(topics[name])
        if document:
            documents.append(document)
    for path in _python_sources(
        stdlib_root or sysconfig.get_paths()["stdlib"]
    ):
        document = []
        for docstring in _docstrings(path):
            document.extend(_prose_sentences(docstring))
        if document:
            documents.append(document)
    if not documents:
        raise RuntimeError(
            "This Python installation has neither `pydoc_data` nor standard "
            "library sources to build the default corpus from; pass text "
            "files with --corpus."
        )
    return documents


def _python_sources(root):
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(
            d for d in subfolders
            if d not in _SKIPPED_DIRS and not d.startswith("config-")
        )
        for name in sorted(files):
            if name.endswith(".py"):
                yield os.path.join(folder, name)


def _docstrings(path):
    try:
        with open(path, encoding="utf-8") as file:
            tree = ast.parse(file.read())
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return []
    nodes = [
        node for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                             ast.AsyncFunctionDef))
    ]
    nodes.sort(key=lambda node: getattr(node, "lineno", 0))
    return [d for d in map(ast.get_docstring, nodes) if d]


def _prose_sentences(text):
    sentences = []
    for paragraph in re.split(r"\n\s*\n", text):
        lines = paragraph.split("\n")
        # Indented paragraphs are code, grammar or literal blocks.
        if not lines[0] or lines[0][0].isspace() or ">>>" in paragraph:
            continue
        if len(lines) > 1 and _HEADING_UNDERLINE.match(lines[1].strip()):
            continue
        prose = " ".join(line.strip() for line in lines)
        prose = _MARKUP.sub("", _ROLE.sub(r"\1", prose))
        for sentence in split_sentences(prose):
            if len(sentence.split()) >= 3 and re.search(r"[a-z]", sentence):
                sentences.append(sentence)
    return sentences


def write_sentences_file(documents, path):
    """Writes documents in the original BERT layout (a sentence per line,
    a blank line between documents)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as file:
        for document in documents:
            file.write("\n".join(document))
            file.write("\n\n")
