"""CLI start-up: how long `keras-bert` takes to answer, and what it prints.

Wall time, median of `--repeats` fresh processes each, of
`keras-bert --help`, of `keras-bert COMMAND --help` for every command, of
`python -c "import keras_bert"`, and of a real command (`keras-bert demo`,
under each backend) until its first line of output and until it exits,
with the lines it printed to stderr (TensorFlow's log lines: the command
itself prints none). With
`--baseline DIR`, a checkout of another keras_bert version (e.g.
`git worktree add /tmp/keras_bert_base COMMIT`), every process also runs
from there, interleaved with this checkout's in each repeat so that both
see the same load. Each process runs `python -m keras_bert.cli` from the
checkout's root, which is what the `keras-bert` script runs.
Writes the "## CLI start-up" section of docs/performance.md.

Run from the repository root:

    .venv/bin/python bench/bench_cli_startup.py [--repeats 5] \
        [--baseline /tmp/keras_bert_base] [--no-write]
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench.common import machine_info  # noqa: E402
from bench.common import write_section  # noqa: E402
from keras_bert.cli import build_parser  # noqa: E402

DOC = os.path.join(ROOT, "docs", "performance.md")
SECTION = "## CLI start-up"
BACKENDS = ("tensorflow", "jax", "torch")


def command_names():
    subparsers = next(action for action in build_parser()._actions
                      if action.dest == "command")
    return list(subparsers.choices)


def cases():
    """(label, argv after `python`, backend or None, real command?)."""
    cli = ["-m", "keras_bert.cli"]
    yield "`keras-bert --help`", cli + ["--help"], None, False
    for name in command_names():
        yield f"`keras-bert {name} --help`", cli + [name, "--help"], None, False
    yield "`python -c \"import keras_bert\"`", ["-c", "import keras_bert"], \
        None, False
    for backend in BACKENDS:
        yield f"`keras-bert demo` ({backend})", cli + ["demo"], backend, True


def run_once(argv, backend, checkout):
    """(seconds to the first line of stdout, seconds to exit, exit status,
    lines on stderr) of one fresh process."""
    # The user's environment, without what would quiet TensorFlow.
    env = {k: v for k, v in os.environ.items()
           if k != "TF_CPP_MIN_LOG_LEVEL"}
    if backend:
        env["KERAS_BACKEND"] = backend
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, *argv], cwd=checkout, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.readline()
    first_line = time.perf_counter() - started
    _, stderr = process.communicate()
    finished = time.perf_counter() - started
    return first_line, finished, process.returncode, len(stderr.splitlines())


def measure(checkouts, repeats, log=print):
    """{(label, checkout): [run_once results]}, interleaved per repeat."""
    results = {}
    for repeat in range(repeats):
        for label, argv, backend, _ in cases():
            for checkout in checkouts:
                result = run_once(argv, backend, checkout)
                results.setdefault((label, checkout), []).append(result)
        log(f"repeat {repeat + 1}/{repeats} done "
            f"(load average {os.getloadavg()[0]:.1f})")
    return results


def _median(runs, index):
    return statistics.median(run[index] for run in runs)


def table(results, checkouts, repeats, load_before, load_after, baseline):
    info = machine_info()
    names = ["this checkout"] + ([f"baseline ({baseline})"] if baseline
                                 else [])
    lines = [
        SECTION, "",
        f"Written by `python bench/bench_cli_startup.py --repeats {repeats}"
        + (f" --baseline {baseline}" if baseline else "") + "`: wall "
        f"seconds, median of {repeats} fresh processes, run from the "
        "checkout's root (`python -m keras_bert.cli`, what the `keras-bert` "
        "script runs). `--help` rows: until exit; `demo` rows: until the "
        "first line of output / until exit, and the lines it printed to "
        "stderr (median; all TensorFlow, absl and CUDA log lines). Machine: "
        f"{info['cores']} cores, {info['cpu']}; ISA flags "
        f"{', '.join(info['isa']) or 'none of avx2/avx512f/avx512_bf16/amx'};"
        f" Python {info['python']}; 1-minute load average {load_before:.1f} "
        f"before, {load_after:.1f} after (other jobs share the machine).",
        "",
        "| command | " + " | ".join(names) + " |",
        "|---" * (len(names) + 1) + "|",
    ]
    for label, _, _, real in cases():
        cells = []
        for checkout in checkouts:
            runs = results[(label, checkout)]
            if any(run[2] for run in runs):
                cells.append(f"failed (exit {runs[0][2]})")
            elif real:
                cells.append(
                    f"{_median(runs, 0):.2f} / {_median(runs, 1):.2f}, "
                    f"{_median(runs, 3):g} stderr lines")
            else:
                cells.append(f"{_median(runs, 1):.2f}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--baseline", metavar="DIR",
                        help="another keras_bert checkout to compare with")
    parser.add_argument("--no-write", action="store_true",
                        help="print the table, leave docs/ alone")
    args = parser.parse_args()
    checkouts = [ROOT] + ([os.path.abspath(args.baseline)]
                         if args.baseline else [])
    load_before = os.getloadavg()[0]
    results = measure(checkouts, args.repeats)
    text = table(results, checkouts, args.repeats, load_before,
                 os.getloadavg()[0], args.baseline)
    print(text)
    if not args.no_write:
        write_section(DOC, SECTION, text)


if __name__ == "__main__":
    main()
