"""The stderr filter drops TensorFlow/absl/CUDA noise and nothing else."""

import os
import subprocess
import sys
import tempfile
from unittest import mock

from keras_bert.commands import quiet_logs
from tests.test_case import TestCase

REPOSITORY = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(quiet_logs.__file__))))

# Lines TensorFlow 2.21 prints on a CPU-only machine, also with
# TF_CPP_MIN_LOG_LEVEL set (they come before absl reads it).
NOISE = [
    b"WARNING: All log messages before absl::InitializeLog() is called are "
    b"written to STDERR",
    b"I0000 00:00:1796175728.479676   10327 port.cc:153] oneDNN custom "
    b"operations are on. You may see slightly different numerical results",
    b"I0000 00:00:1796175728.481491   10327 cudart_stub.cc:31] Could not find "
    b"cuda drivers on your machine, GPU will not be used.",
    b"I0000 00:00:1796175728.600880   10327 cpu_feature_guard.cc:227] This "
    b"TensorFlow binary is optimized to use available CPU instructions",
    b"E0000 00:00:1796175741.889743   10327 cuda_platform.cc:52] failed call "
    b"to cuInit: INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR",
    b"E0000 00:00:1796175768.606348   10434 util.cc:131] oneDNN supports "
    b"DT_INT64 only on platforms with AVX-512. Falling back to the default",
    b"W1102 12:01:02.123456   10434 op_kernel.cc:1828] a C++ warning",
    # Reported on GPU machines where TensorFlow and JAX both load CUDA.
    b"E0000 00:00:1751448150.986970   10148 cuda_dnn.cc:8579] Unable to "
    b"register cuDNN factory: Attempting to register factory for plugin "
    b"cuDNN when one has already been registered",
    b"W0000 00:00:1751448151.003754   10148 computation_placer.cc:177] "
    b"computation placer already registered.",
    b"2025-07-02 09:22:30.972636: E external/local_xla/xla/stream_executor/"
    b"cuda/cuda_fft.cc:467] Unable to register cuFFT factory: Attempting to "
    b"register factory for plugin cuFFT when one has already been registered",
    b"2025-02-09 09:37:32.343117: I tensorflow/core/platform/"
    b"cpu_feature_guard.cc:182] This TensorFlow binary is optimized",
]
KEPT = [
    b"Traceback (most recent call last):",
    b'  File "x.py", line 1, in <module>',
    b"ValueError: WARNING: not a log line",
    b"keras-bert predict: error: --model runs/x: no such directory.",
    b"E1102 12:01:02.123456   10434 some_kernel.cc:7] a real C++ error",
    b"F0000 00:00:1796175768.606348   10434 check.cc:1] Check failed: x",
    b"2025-02-09 09:37:32.343117: E tensorflow/core/x.cc:1] a real error",
    b"I am a line that starts with I",
    b"",
]


def filtered(data):
    """What `filter_stream` writes for `data` (bytes)."""
    with tempfile.TemporaryFile() as source, \
            tempfile.TemporaryFile() as sink:
        source.write(data)
        source.seek(0)
        quiet_logs.filter_stream(source.fileno(), sink.fileno())
        sink.seek(0)
        return sink.read()


class FilterStreamTest(TestCase):
    def test_drops_noise_keeps_everything_else_in_order(self):
        lines = []
        for i in range(max(len(NOISE), len(KEPT))):
            lines += NOISE[i:i + 1] + KEPT[i:i + 1]
        self.assertEqual(filtered(b"\n".join(lines) + b"\n"),
                         b"\n".join(KEPT) + b"\n")

    def test_partial_lines_pass(self):
        # A progress bar rewrites its line with \r and no newline.
        progress = b"\r 10%|#  | 1/10\r 20%|## | 2/10"
        self.assertEqual(filtered(progress), progress)
        self.assertEqual(filtered(NOISE[1] + b"\n" + progress), progress)
        self.assertEqual(filtered(b"no newline at the end"),
                         b"no newline at the end")
        self.assertEqual(filtered(NOISE[2]), b"")


class QuietLogsTest(TestCase):
    def test_filters_native_writes_to_fd_2_and_restores_it(self):
        saved = os.dup(2)
        with tempfile.TemporaryFile() as terminal:
            os.dup2(terminal.fileno(), 2)
            try:
                # Another test in this worker may have left its own level.
                with mock.patch.dict(os.environ, {"TF_CPP_MIN_LOG_LEVEL": "0"}), \
                        quiet_logs.quiet_logs():
                    self.assertEqual(os.environ["TF_CPP_MIN_LOG_LEVEL"], "2")
                    os.write(2, b"\n".join(NOISE + KEPT[:4]) + b"\n")
                os.write(2, NOISE[0] + b"\n")
            finally:
                os.dup2(saved, 2)
                os.close(saved)
            terminal.seek(0)
            # After the block, fd 2 is the terminal again, unfiltered.
            self.assertEqual(terminal.read(),
                             b"\n".join(KEPT[:4] + NOISE[:1]) + b"\n")

    def test_lines_before_a_crash_come_through(self):
        # The filter is a process of its own: a fatal C++ check that aborts
        # the command still reaches the terminal.
        written = NOISE[1] + b"\n" + KEPT[5] + b"\n"
        script = (
            "import os\n"
            "from keras_bert.commands.quiet_logs import quiet_logs\n"
            "with quiet_logs():\n"
            f"    os.write(2, {written!r})\n"
            "    os.abort()\n")
        result = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, timeout=120,
            cwd=REPOSITORY)
        self.assertNotEqual(result.returncode, 0)
        self.assertEqual(result.stderr, KEPT[5] + b"\n")
