import os

import pytest

from keras_bert.training.pretraining.python_docs_corpus import python_docs_documents
from keras_bert.training.pretraining.python_docs_corpus import write_sentences_file
from keras_bert.training.pretraining.text_corpus import TextCorpus
from tests.test_case import TestCase

SOURCE = '''"""A module about widgets.

Widgets are small. They are made of parts.

>>> make_widget()
Widget()
"""


class Widget:
    """A widget holds :class:`Part` objects.

    Example::

        w = Widget()
        w.add(part)
    """

    def add(self, part):
        """Adds ``part`` to the widget. Returns nothing at all."""
'''


class PythonDocsCorpusTest(TestCase):
    def make_sources(self):
        root = self.get_temp_dir()
        for folder in ("", "test"):
            os.makedirs(os.path.join(root, folder), exist_ok=True)
            with open(os.path.join(root, folder, "widgets.py"), "w") as f:
                f.write(SOURCE)
        return root

    def test_docstring_prose_only_in_source_order(self):
        documents = python_docs_documents(stdlib_root=self.make_sources())
        # The last document is the one module (tests folders are skipped).
        self.assertEqual(documents[-1], [
            "A module about widgets.",
            "Widgets are small.",
            "They are made of parts.",
            "A widget holds Part objects.",
            "Adds part to the widget.",
            "Returns nothing at all.",
        ])
        # The language reference topics come first, as prose.
        self.assertGreater(len(documents), 50)
        text = "\n".join(s for d in documents for s in d)
        self.assertNotIn(">>>", text)
        self.assertNotIn("::=", text)

    def test_deterministic_and_readable_as_a_corpus(self):
        root = self.make_sources()
        documents = python_docs_documents(stdlib_root=root)
        self.assertEqual(documents, python_docs_documents(stdlib_root=root))
        path = os.path.join(self.get_temp_dir(), "docs.txt")
        write_sentences_file(documents, path)
        self.assertEqual(list(TextCorpus([path], "sentences").documents("all")),
                         documents)

    @pytest.mark.slow
    def test_whole_standard_library(self):
        documents = python_docs_documents()
        words = sum(len(s.split()) for d in documents for s in d)
        self.assertGreater(len(documents), 300)
        self.assertGreater(words, 100_000)
