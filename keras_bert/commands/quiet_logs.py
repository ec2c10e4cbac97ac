"""Keeps TensorFlow's, absl's and CUDA's log lines off a command's terminal.

TensorFlow's C++ libraries log through absl. `TF_CPP_MIN_LOG_LEVEL=2`
hides their info and warning lines, but only once logging is set up: the
lines the libraries print while loading (`port.cc] oneDNN custom
operations are on`, `cudart_stub.cc] Could not find cuda drivers`, absl's
`WARNING: All log messages before absl::InitializeLog() ...`) ignore it,
and a few error-level lines report nothing wrong (`failed call to cuInit`
and `oneDNN supports DT_INT64 only ...` on CPU-only machines, `Unable to
register cuDNN factory` where TensorFlow and another framework both load
CUDA). So while a command runs, file descriptor 2 goes through a filter
process that drops those lines and passes everything else unchanged:
Python tracebacks, the command's own errors, every other error-level log
line. A separate process, not a thread, so that a crash's last words
still get out.

Run as a script, this file is that filter (standard library only).
"""

import contextlib
import os
import re
import signal
import subprocess
import sys

# A C++ log line: absl's "I0000 00:00:1796175728.479676   10327 port.cc:153] "
# (severity Info/Warning/Error/Fatal, MMDD, time, thread, file:line) or
# TensorFlow's own "2025-07-02 09:22:30.972636: E path/cuda_fft.cc:467] ".
_LOG_LINE = re.compile(
    rb"(?:(?P<absl>[IWEF])\d{4} \d\d:\d\d:\d+\.\d+ +\d+"
    rb"|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: (?P<tsl>[IWEF])) \S+:\d+\] ")
_PREAMBLE = b"WARNING: All log messages before absl::InitializeLog() is called"
# Error-level lines that report nothing wrong.
_NOISE_ERRORS = re.compile(
    # No GPU driver: TensorFlow runs on the CPU, as it said it would.
    rb"failed call to cuInit"
    # Printed on CPUs with AVX-512 too; the Eigen kernels run instead.
    rb"|oneDNN supports DT_INT64 only on platforms with AVX-512"
    # GPU machines, when TensorFlow and JAX or PyTorch both load CUDA.
    rb"|Unable to register cu(?:DNN|FFT|BLAS) factory: Attempting to "
    rb"register factory for plugin")
# A partial line that may still become a noise line is held back until
# its newline; any other partial line (a progress bar's update) passes.
_MAY_BECOME_NOISE = re.compile(rb"[IWE]\d{0,4}(?: |$)|\d{4}-|WARNING: All")


def is_noise(line):
    """Whether a line of stderr (bytes) is one the filter drops: the
    preamble absl prints before its first line, C++ info and warning lines,
    and the error-level lines in `_NOISE_ERRORS`."""
    if line.startswith(_PREAMBLE):
        return True
    match = _LOG_LINE.match(line)
    if match is None:
        return False
    severity = match["absl"] or match["tsl"]
    return severity in b"IW" or bool(
        _NOISE_ERRORS.match(line, match.end()))


def _write_all(fd, data):
    while data:
        data = data[os.write(fd, data):]


def filter_stream(source, sink):
    """Copies `source` to `sink` (file descriptors) without noise lines."""
    pending = b""
    while chunk := os.read(source, 1 << 16):
        *lines, pending = (pending + chunk).split(b"\n")
        kept = b"".join(line + b"\n" for line in lines if not is_noise(line))
        if pending and not _MAY_BECOME_NOISE.match(pending):
            kept, pending = kept + pending, b""
        try:
            _write_all(sink, kept)
        except OSError:
            pass  # The terminal is gone; keep draining so the writer lives.
    if not is_noise(pending):
        _write_all(sink, pending)


def _start_filter():
    """Points fd 2 at a new filter process; returns (the process, a
    duplicate of the old fd 2), or None when no filter could start."""
    opened = []
    try:
        terminal = os.dup(2)
        opened.append(terminal)
        read_end, write_end = os.pipe()
        opened += [read_end, write_end]
        # -I -S: the filter needs no site packages, and no keras_bert.
        child = subprocess.Popen(
            [sys.executable, "-I", "-S", os.path.abspath(__file__)],
            stdin=read_end, stdout=terminal)
    except OSError:
        for fd in opened:
            os.close(fd)
        return None
    os.dup2(write_end, 2)
    os.close(read_end)
    os.close(write_end)
    return child, terminal


@contextlib.contextmanager
def quiet_logs():
    """Hides TensorFlow/absl/CUDA log noise from stderr inside the block."""
    # Errors only, unless the environment already asks for fewer lines.
    level = os.environ.get("TF_CPP_MIN_LOG_LEVEL", "")
    if not level.isdigit() or int(level) < 2:
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
    sys.stderr.flush()
    started = _start_filter()
    try:
        yield
    finally:
        if started:
            child, terminal = started
            sys.stderr.flush()
            os.dup2(terminal, 2)
            os.close(terminal)
            # Processes the command started may still hold the pipe open.
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=10)


if __name__ == "__main__":
    # Ctrl-C stops the command, whose traceback must still come through.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    filter_stream(0, 1)
