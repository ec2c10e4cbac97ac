import os

from keras_bert.training.pretraining.text_corpus import TextCorpus
from keras_bert.training.pretraining.text_corpus import detect_format
from tests.test_case import TestCase
from tests.training.toy_corpus import toy_documents
from tests.training.toy_corpus import write_lines
from tests.training.toy_corpus import write_toy_corpus

PROSE = """The first paragraph is hard-wrapped
across two lines. It has two sentences.

Mr. Smith wrote the second one; it ends
here!
"""


class TextCorpusTest(TestCase):
    def test_sentence_per_line_documents(self):
        path = write_toy_corpus(self.get_temp_dir(), num_documents=3)
        self.assertEqual(detect_format(path), "sentences")
        documents = list(TextCorpus([path]).documents("all"))
        self.assertEqual(documents, toy_documents(num_documents=3))

    def test_paragraph_file_is_one_document_of_sentences(self):
        path = write_lines(os.path.join(self.get_temp_dir(), "book.txt"),
                           PROSE.splitlines())
        self.assertEqual(detect_format(path), "paragraphs")
        documents = list(TextCorpus([path]).documents("all"))
        self.assertEqual(documents, [[
            "The first paragraph is hard-wrapped across two lines.",
            "It has two sentences.",
            "Mr. Smith wrote the second one; it ends here!",
        ]])

    def test_paragraph_file_is_cut_into_documents_of_paragraphs(self):
        paragraphs = [f"Paragraph {p} starts here. It goes on {p} times."
                      for p in range(7)]
        lines = [line for text in paragraphs for line in (text, "")]
        path = write_lines(os.path.join(self.get_temp_dir(), "book.txt"),
                           lines)
        corpus = TextCorpus([path], "paragraphs",
                            paragraph_document_sentences=3)
        documents = list(corpus.documents("all"))
        # Closed at the first paragraph end after 3 sentences: 2 paragraphs.
        self.assertEqual([len(d) for d in documents], [4, 4, 4, 2])
        self.assertEqual(documents[1][0], "Paragraph 2 starts here.")
        self.assertEqual(corpus.check()["documents"], 4)

    def test_split_documents_are_contiguous_text(self):
        # An "is next" pair must never join two pieces that held-out text
        # separated, so each side's document is an unbroken run.
        sentences = [f"Sentence {i} of the one document." for i in range(200)]
        path = write_lines(os.path.join(self.get_temp_dir(), "one.txt"),
                           sentences)
        corpus = TextCorpus([path], "sentences", heldout_fraction=0.3,
                            heldout_piece_sentences=5)
        for split in ("train", "heldout"):
            parts = list(corpus.documents(split))
            self.assertGreater(len(parts), 1)
            for part in parts:
                start = sentences.index(part[0])
                self.assertEqual(part, sentences[start:start + len(part)])
        self.assertEqual(
            sum(len(d) for s in ("train", "heldout")
                for d in corpus.documents(s)), 200)

    def test_heldout_split_is_deterministic_and_disjoint(self):
        path = write_toy_corpus(self.get_temp_dir(), num_documents=40,
                                sentences_per_document=10)
        corpus = TextCorpus([path], heldout_fraction=0.3,
                            heldout_piece_sentences=5)
        train = [s for d in corpus.documents("train") for s in d]
        heldout = [s for d in corpus.documents("heldout") for s in d]
        self.assertEqual(len(train) + len(heldout), 400)
        self.assertTrue(40 <= len(heldout) <= 200, len(heldout))
        again = [s for d in corpus.documents("heldout") for s in d]
        self.assertEqual(heldout, again)

    def test_shuffle_seed_changes_file_order(self):
        directory = self.get_temp_dir()
        paths = [write_lines(os.path.join(directory, f"{i}.txt"),
                             [f"Sentence number {i} here."])
                 for i in range(6)]
        corpus = TextCorpus(paths)
        orders = {tuple(d[0] for d in corpus.documents("all", shuffle_seed=s))
                  for s in range(4)}
        self.assertGreater(len(orders), 1)
        self.assertEqual(
            sorted(next(iter(orders))),
            sorted(d[0] for d in corpus.documents("all")),
        )

    def test_empty_corpus(self):
        with self.assertRaisesRegex(ValueError, "no files"):
            TextCorpus([])

    def test_file_without_sentences_is_named(self):
        directory = self.get_temp_dir()
        good = write_toy_corpus(directory)
        empty = write_lines(os.path.join(directory, "blank.txt"), ["", "  "])
        with self.assertRaisesRegex(ValueError, "blank.txt contains no sentences"):
            TextCorpus([good, empty]).check()

    def test_non_utf8_names_file_and_line(self):
        path = os.path.join(self.get_temp_dir(), "latin1.txt")
        with open(path, "wb") as file:
            file.write(b"A fine line.\nAnother one.\nCaf\xe9 au lait.\n")
        with self.assertRaisesRegex(ValueError, r"latin1.txt, line 3: not valid UTF-8"):
            TextCorpus([path]).check()

    def test_missing_file(self):
        with self.assertRaisesRegex(FileNotFoundError, "nope.txt"):
            TextCorpus(["/nonexistent/nope.txt"])
