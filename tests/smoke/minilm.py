"""What the smoke tests share: the all-MiniLM-L6-v2 directory and a few
real sentences."""

from tests.checkpoints.reference_checkpoints import MINILM_DIR
from tests.export import export_test_utils

SEQUENCE_LENGTH = 32


def sentences(count=8):
    return list(export_test_utils.sst2_sentences(count))


__all__ = ["MINILM_DIR", "SEQUENCE_LENGTH", "sentences"]
