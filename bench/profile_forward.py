"""Where the time of one BERT forward goes: per-op profiles, grouped.

The tables of "Where the time goes" in docs/performance.md, for the
all-MiniLM-L6-v2 weights loaded into each library as the inference
benchmark loads them (`bench/keras_runtime.py`,
`bench/transformers_runtime.py`), same inputs:

* JAX (keras_bert, keras-hub): the forward jitted (`stateless_call` under
  `jax.jit`, the program `predict_on_batch` compiles), each call under
  `jax.profiler.trace` with `XLA_FLAGS=--xla_cpu_enable_xprof_traceme=true`;
  self time per XLA op, each op put into a group by what its optimized
  HLO computes (`bench/profile_xla.py`).
* PyTorch (keras_bert eager, keras-hub eager, transformers): forwards as
  the benchmark runs them (`predict_on_batch`; transformers under
  `torch.inference_mode()`), each under `torch.profiler`; self CPU time
  per aten op from `key_averages()`, grouped by op name (`TORCH_GROUPS`).

Each backend runs in its own process, started with the thread settings of
`bench_inference --threads` (one thread: the steadiest on a shared
machine). The libraries take turns, one profiled forward each, for
`--calls` rounds; times are per forward, summed over ops. The load still
moves the milliseconds: compare the shares.

    .venv/bin/python -m bench.profile_forward --backends jax,torch \
        --batch 8 --length 128 --threads 1 --calls 3
"""

import argparse
import collections
import os
import subprocess
import sys

from bench import common
from bench import profile_xla
from bench.bench_inference import thread_env
from bench.keras_runtime import KerasRuntime
from bench.transformers_runtime import TransformersRuntime

LIBRARIES = {"jax": ("keras_bert", "keras_hub"),
             "torch": ("keras_bert", "keras_hub", "transformers")}

# aten op name (a substring of it) -> group; the first match wins. `bmm`
# is keras-hub's einsum: its projections and its attention products.
TORCH_GROUPS = (
    ("scaled_dot_product", "SDPA attention"),
    ("addmm", "GEMMs (mm / addmm / bmm / oneDNN linear)"),
    ("aten::mm", "GEMMs (mm / addmm / bmm / oneDNN linear)"),
    ("aten::bmm", "GEMMs (mm / addmm / bmm / oneDNN linear)"),
    # keras_bert's float32 products without gradients (fused_ops).
    ("_linear_pointwise", "GEMMs (mm / addmm / bmm / oneDNN linear)"),
    ("softmax", "softmax"),
    ("gelu", "GELU"),
    ("aten::add", "elementwise add"),
    ("copy_", "copies"),
    ("clone", "copies"),
    ("contiguous", "copies"),
    ("layer_norm", "LayerNorm"),
    ("where", "mask select"),
    ("masked_fill", "mask select"),
)


class TorchProfile:
    """`run()`: self CPU microseconds per aten op of one `forward()`."""

    groups = tuple(dict.fromkeys([g for _, g in TORCH_GROUPS] + ["other"]))

    def __init__(self, forward):
        self.forward = forward
        forward(), forward()  # warm up, as the benchmark does

    def run(self):
        import torch.profiler

        with torch.profiler.profile(
                activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            self.forward()
        return collections.Counter({row.key: row.self_cpu_time_total
                                    for row in prof.key_averages()})

    def group(self, op):
        return next((g for key, g in TORCH_GROUPS if key in op), "other")


def jax_forward(library, case):
    """keras_bert or keras-hub's forward as one jitted stateless function."""
    import jax

    model = KerasRuntime().model(library, case["dtype"], None)
    inputs = common.synthetic_inputs(case["batch"], case["length"],
                              model.vocabulary_size)
    trainable = [v.value for v in model.trainable_variables]
    non_trainable = [v.value for v in model.non_trainable_variables]

    def forward(trainable, non_trainable, inputs):
        return model.stateless_call(trainable, non_trainable, inputs,
                                    training=False)[0]

    forward.__name__ = f"forward_{library}"  # the HLO module's name
    return jax.jit(forward), (trainable, non_trainable, inputs)


def make_profile(backend, library, case):
    if backend == "jax":
        return profile_xla.XlaProfile(*jax_forward(library, case))
    if library == "transformers":
        return TorchProfile(TransformersRuntime().forward(case))
    return TorchProfile(KerasRuntime().forward({**case, "library": library}))


def profile_backend(backend, args):
    """This process's backend: profiles every library, prints the tables.

    The libraries take turns, one profiled forward each, `--calls` rounds
    (in a rotated order), so that they all see the same drift in load.
    """
    case = {"library": "", "variant": "", "dtype": args.dtype,
            "batch": args.batch, "length": args.length}
    libraries = [lib for lib in args.libraries.split(",")
                 if lib in LIBRARIES[backend]]
    profiles = {}
    for library in libraries:
        print(f"preparing {library}/{backend}", file=sys.stderr)
        profiles[library] = make_profile(backend, library, case)
    totals = {library: collections.Counter() for library in libraries}
    for call in range(args.calls):
        shift = call % len(libraries)
        for library in libraries[shift:] + libraries[:shift]:
            totals[library].update(profiles[library].run())
    results = {}
    for library, profile in profiles.items():
        groups, ops = dict.fromkeys(profile.groups, 0.0), []
        for op, micros in totals[library].items():
            ms = micros / 1000 / args.calls
            if ms > 0:
                groups[profile.group(op)] += ms
                ops.append((ms, op, profile.group(op)))
        results[library] = (groups, sorted(ops, reverse=True))
    what = ("JAX: XLA op self time" if backend == "jax"
            else "PyTorch: aten op self CPU time")
    print(format_profiles(f"{what}, ms per forward (share), {args.calls} "
                          "forwards", results, args))


def format_profiles(title, profiles, args):
    """Markdown: one column per library, then each library's top ops."""
    libraries = list(profiles)
    totals = {lib: sum(profiles[lib][0].values()) for lib in libraries}
    lines = [f"\n### {title}, {args.dtype} {args.batch} x {args.length}, "
             f"threads {args.threads or 'default'}",
             "| group | " + " | ".join(libraries) + " |",
             "|---" + "|---:" * len(libraries) + "|"]
    for group in next(iter(profiles.values()))[0]:
        cells = []
        for lib in libraries:
            ms = profiles[lib][0].get(group, 0.0)
            cells.append(f"{ms:.1f} ({100 * ms / totals[lib]:.1f}%)")
        if any(profiles[lib][0].get(group) for lib in libraries):
            lines.append(f"| {group} | " + " | ".join(cells) + " |")
    lines.append("| all ops | " + " | ".join(
        f"{totals[lib]:.1f}" for lib in libraries) + " |")
    for lib in libraries:
        lines.append(f"\n{lib}: top {args.top} ops (ms, group)")
        for ms, op, group in profiles[lib][1][:args.top]:
            lines.append(f"  {ms:9.2f}  {op:<48} {group}")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backends", default="jax,torch")
    parser.add_argument("--libraries", default="keras_bert,keras_hub,"
                        "transformers", help="those that run on a backend")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--threads", type=int, default=1,
                        help="threads per process (0: libraries' default)")
    parser.add_argument("--calls", type=int, default=3,
                        help="forwards profiled per library (after warm-up)")
    parser.add_argument("--top", type=int, default=8,
                        help="ops listed per library below the table")
    parser.add_argument("--backend-process", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.backend_process:
        return profile_backend(args.backend_process, args)
    for backend in args.backends.split(","):
        if backend not in LIBRARIES:
            parser.error(f"--backends: {backend!r} is not one of "
                         f"{', '.join(LIBRARIES)}")
        env = {**os.environ, **common.WORKER_ENV, "KERAS_BACKEND": backend,
               **thread_env(args.threads)}
        env["XLA_FLAGS"] = " ".join(filter(None, (
            env.get("XLA_FLAGS"), profile_xla.TRACEME_FLAG)))
        # Pinned like bench_inference's workers: XLA:CPU ignores the
        # thread variables, so only the affinity keeps JAX on N cores.
        cpus = common.first_cpus(args.threads)
        subprocess.run(
            [sys.executable, "-m", "bench.profile_forward", *sys.argv[1:],
             "--backend-process", backend],
            cwd=common.REPO_ROOT, env=env, check=True,
            preexec_fn=cpus and (lambda: os.sched_setaffinity(0, cpus)))


if __name__ == "__main__":
    main()
