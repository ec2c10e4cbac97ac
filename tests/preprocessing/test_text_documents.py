import os

from keras_bert.preprocessing import read_documents
from keras_bert.preprocessing import split_sentences
from tests.test_case import TestCase


class TextDocumentsTest(TestCase):
    def write(self, name, text):
        path = os.path.join(self.get_temp_dir(), name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def test_sentence_per_line(self):
        first = self.write("a.txt", "One.\nTwo.\n\n\nThree.\n")
        second = self.write("b.txt", "Four.\n\nFive.")
        self.assertEqual(list(read_documents([first, second])),
                         [["One.", "Two."], ["Three."], ["Four."], ["Five."]])

    def test_paragraphs(self):
        path = self.write("p.txt", "Mr. Smith came. He sat\ndown! Did he "
                                   "stay?\n\nA new one. Done.\n")
        self.assertEqual(list(read_documents(path, mode="paragraphs")), [
            ["Mr. Smith came.", "He sat down!", "Did he stay?"],
            ["A new one.", "Done."],
        ])

    def test_split_sentences(self):
        self.assertEqual(
            split_sentences('He said "Hi!" Then J. Doe left. E.g. this. '
                            "3 apples (fresh) fell. end"),
            ['He said "Hi!"', "Then J. Doe left.", "E.g. this.",
             "3 apples (fresh) fell. end"])
        self.assertEqual(split_sentences("  "), [])

    def test_errors(self):
        with self.assertRaisesRegex(FileNotFoundError, "missing.txt"):
            list(read_documents("/tmp/missing.txt"))
        with self.assertRaisesRegex(ValueError, "mode"):
            list(read_documents(self.write("x.txt", "a"), mode="words"))
