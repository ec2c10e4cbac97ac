"""The safetensors reader refuses what the safetensors library refuses,
naming the file (issue 52, case 3)."""

import json
import os
import resource
import struct

import numpy as np

from keras_bert.checkpoints import CheckpointError
from keras_bert.checkpoints.weight_files import read_safetensors
from keras_bert.checkpoints.weight_files import read_safetensors_metadata
from tests.test_case import TestCase


def write_safetensors(filename, header, data=b"", header_bytes=None):
    """A safetensors file from a header dict (or raw header bytes)."""
    raw = header_bytes if header_bytes is not None else json.dumps(
        header).encode()
    with open(filename, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw + data)
    return filename


def f32(begin, end, shape):
    return {"dtype": "F32", "shape": shape, "data_offsets": [begin, end]}


class ReadSafetensorsTest(TestCase):
    def setUp(self):
        super().setUp()
        self.filename = os.path.join(self.get_temp_dir(), "model.safetensors")

    def test_a_valid_file_reads_bfloat16_too(self):
        import ml_dtypes

        values = np.array([1.5, -2.0], ml_dtypes.bfloat16)
        write_safetensors(self.filename, {
            "__metadata__": {"format": "pt"},
            "a": f32(0, 8, [2]),
            "b": {"dtype": "BF16", "shape": [2], "data_offsets": [8, 12]},
        }, np.array([1, 2], "float32").tobytes() + values.tobytes())
        tensors = read_safetensors(self.filename)
        np.testing.assert_array_equal(tensors["a"], [1, 2])
        np.testing.assert_array_equal(tensors["b"].astype("float32"),
                                      [1.5, -2.0])
        self.assertEqual(read_safetensors_metadata(self.filename),
                         {"format": "pt"})

    def test_overlapping_offsets_are_refused(self):
        # Layer 1's bias read from layer 0's bytes, silently, before.
        write_safetensors(self.filename, {
            "layer_0.bias": f32(0, 8, [2]), "layer_1.bias": f32(0, 8, [2]),
        }, bytes(8))
        with self.assertRaisesRegex(
                CheckpointError,
                "model.safetensors is truncated or not a safetensors file "
                r"\(invalid offset for tensor"):
            read_safetensors(self.filename)

    def test_gaps_and_trailing_bytes_are_refused(self):
        for header, size in [
            ({"a": f32(0, 8, [2]), "b": f32(12, 20, [2])}, 20),
            ({"a": f32(0, 8, [2])}, 12),
        ]:
            write_safetensors(self.filename, header, bytes(size))
            with self.assertRaisesRegex(CheckpointError, "model.safetensors"):
                read_safetensors(self.filename)

    def test_a_header_larger_than_the_library_reads_is_not_read(self):
        # A header of 200 MB (the library stops at 100 MB), sparse on disk.
        size = 200 * 2**20
        with open(self.filename, "wb") as f:
            f.write(struct.pack("<Q", size) + b"{")
            f.truncate(8 + size + 16)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        with self.assertRaisesRegex(CheckpointError,
                                    "model.safetensors.*header too large"):
            read_safetensors(self.filename)
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
        self.assertLess(grown * 1024, 50 * 2**20)

    def test_deep_nesting_is_an_error_naming_the_file(self):
        nested = b'{"x":' * 100_000 + b"1" + b"}" * 100_000
        write_safetensors(self.filename, None,
                          header_bytes=b'{"a":' + nested + b"}")
        with self.assertRaisesRegex(CheckpointError,
                                    "model.safetensors.*recursion limit"):
            read_safetensors(self.filename)

    def test_truncated_and_garbage_files_name_the_file(self):
        for content in (b"", b"abc", b"<html>404</html>",
                        struct.pack("<Q", 1000) + b"{}"):
            with open(self.filename, "wb") as f:
                f.write(content)
            with self.assertRaisesRegex(
                    CheckpointError, "model.safetensors is truncated or not "
                    f"a safetensors file .*the file has {len(content)} "
                    "bytes"):
                read_safetensors(self.filename)
