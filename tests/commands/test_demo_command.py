"""`keras-bert demo`: a tiny BERT on a sentence, the same numbers each
run."""

from tests.commands.cli_helpers import run_cli
from tests.test_case import TestCase


class DemoCommandTest(TestCase):
    def test_seeded_runs_repeat_and_seeds_differ(self):
        first = run_cli("demo")
        self.assertEqual(first[0], 0)
        self.assertIn("sequence_output: (1, 29, 128)", first[1])
        self.assertIn("random weights, seed 0", first[1])
        self.assertEqual(run_cli("demo"), first)
        other = run_cli("demo", "--seed", "1")[1]
        self.assertNotEqual(other.splitlines()[-1], first[1].splitlines()[-1])
