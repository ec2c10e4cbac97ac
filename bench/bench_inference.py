"""Inference speed: keras_bert vs transformers vs keras-hub, plus a GEMM ceiling.

Same weights (all-MiniLM-L6-v2, 6 layers, hidden 384) and the same token ids
in every library, in one run, interleaved (see `bench/common.py`). Each
library runs the way its users would run it at its fastest documented
setting:

* keras_bert: `BertBackbone.from_preset(dir)` and `predict_on_batch`, with
  XLA on JAX (always) and TensorFlow (`jit_compile=True`); eager PyTorch
  (`--torch-compile` adds `jit_compile=True`, i.e. torch.compile).
  `--fused-baseline` adds "keras_bert/BACKEND+fused", the same model forced
  onto `ops.dot_product_attention` (the attention of earlier releases), so
  that the explicit attention path is compared with it in the same run;
  on PyTorch, the same model with Keras' own `Dense` products and
  `ops.dot_product_attention` instead of `keras_bert.fused_ops`.
  `--calls-baseline` adds "keras_bert/torch+calls": on PyTorch the same
  model with every sub-layer called through Keras' `Layer.__call__`,
  without `keras_bert._compat.sublayer_call`'s direct calls.
* keras-hub: `keras_hub.models.BertBackbone.from_preset(dir)` (it converts
  the same Hugging Face folder, so the weights are the real ones) and
  `predict_on_batch` with its default settings (XLA on JAX only); on
  TensorFlow also with `jit_compile=True` ("tensorflow+xla") for fairness.
* transformers: `BertModel.from_pretrained(dir)` eager PyTorch (SDPA
  attention) under `torch.inference_mode()`.
* `--torch-ceiling` adds what PyTorch's own kernels reach on the same
  model: transformers `torch.compile`d ("transformers/torch+compile") and
  the same blocks in `torch.nn.TransformerEncoderLayer` on PyTorch's fused
  inference kernel ("pytorch/torch", `bench/torch_encoder_runtime.py`).
* GEMM ceiling: the four weight GEMMs of one layer at the same token count,
  in NumPy, PyTorch (its `mm`, and oneDNN's linear kernel: "gemm/onednn"),
  JAX, TensorFlow and XLA-compiled TensorFlow ("gemm/tensorflow+xla",
  what keras_bert's TensorFlow models run); the fastest one per dtype is
  the ceiling that model FLOP rates are divided by, and "of own GEMM"
  divides each model's rate by its own library's (JAX's, XLA-compiled
  TensorFlow's, the faster of PyTorch's two).

The models are built in `bench/keras_runtime.py` and
`bench/transformers_runtime.py` (shared with `bench/bench_sst2.py` and
`bench/profile_forward.py`), the FLOP counts and GEMM ceiling are in
`bench/flops.py`.

Run (about 15 minutes per shape on 2 loaded cores; `--quick` for 8 x 128
only, 3 rounds):

    python -m bench.bench_inference --dtypes float32 \
        --output /tmp/bench_results/inference.json
    python -m bench.plot_performance --results /tmp/bench_results

`--threads 1` pins every worker to one CPU (and sets the libraries' thread
variables): the CPU-time ratios ("cpu" columns) are then the steadiest A/B
figures on a shared machine, and "cpu / wall" stays at or below 1.
"""

import argparse
import collections
import statistics
import time

from bench import common
from bench import flops
from bench.keras_runtime import KerasRuntime
from bench.torch_encoder_runtime import TorchEncoderRuntime
from bench.transformers_runtime import TransformersRuntime

BACKENDS = ("jax", "tensorflow", "torch")
SHAPES = ((1, 128), (8, 128), (32, 128), (8, 512))
DTYPES = ("float32", "bfloat16")
REFERENCE = "transformers/torch"
# Same-model baselines ("keras_bert/BACKEND+NAME"): the earlier releases'
# attention and kernels ("fused"), Keras' calls of every sub-layer ("calls").
BASELINES = ("fused", "calls")


# Worker side -------------------------------------------------------------


def make_prepare(worker):
    if worker == "transformers":
        runtimes = {"transformers": TransformersRuntime(),
                    "pytorch": TorchEncoderRuntime()}
    else:
        runtimes = collections.defaultdict(KerasRuntime)
    config = common.read_config(common.minilm_dir())

    def prepare(case):
        if case["library"] == "gemm":
            return flops.gemm_callable(
                case["variant"], case["dtype"], case["batch"] * case["length"],
                config["hidden_size"], config["intermediate_size"])
        return runtimes[case["library"]].forward(case)

    return prepare


# Orchestrator side -------------------------------------------------------


def worker_for(label):
    library, runtime = label.split("/")
    if label == "gemm/numpy":
        # A process of its own: after a GEMM, NumPy's OpenBLAS threads keep
        # spinning for a while and take the cores from the next PyTorch
        # call in the same process (PyTorch's GEMM timed right after
        # NumPy's ran at a quarter of its speed).
        return "numpy"
    if library in ("transformers", "pytorch") or label in (
            "gemm/torch", "gemm/onednn"):
        return "transformers"
    return "keras-" + runtime.split("+")[0]


def case_for(label, dtype, batch, length):
    library, runtime = label.split("/")
    variant = runtime.split("+")[1] if "+" in runtime else ""
    if library == "gemm":
        variant = runtime
    return {"library": library, "variant": variant, "dtype": dtype,
            "batch": batch, "length": length}


def inference_labels(backends, torch_compile, fused_baseline=False,
                     calls_baseline=False, torch_ceiling=False):
    labels = [REFERENCE]
    if torch_ceiling:
        labels += ["transformers/torch+compile", "pytorch/torch"]
    for backend in backends:
        labels.append(f"keras_bert/{backend}")
        if backend == "torch" and torch_compile:
            labels.append("keras_bert/torch+compile")
        if fused_baseline:
            labels.append(f"keras_bert/{backend}+fused")
        if calls_baseline and backend == "torch":
            labels.append("keras_bert/torch+calls")
        labels.append(f"keras_hub/{backend}")
        if backend == "tensorflow":
            labels.append("keras_hub/tensorflow+xla")
    return labels


def gemm_labels(backends, dtype):
    libraries = ["numpy"] if dtype == "float32" else []
    libraries += ["torch", "onednn"] + [b for b in backends if b != "torch"]
    if "tensorflow" in backends:
        libraries.append("tensorflow+xla")
    return [f"gemm/{name}" for name in libraries]


def own_gemm_labels(label):
    """The GEMM rows of the library `label` runs its products in: JAX's
    and XLA-compiled TensorFlow's own, PyTorch's two kernels."""
    library, runtime = label.split("/")
    backend = runtime.split("+")[0]
    if backend == "torch":
        return ("gemm/torch", "gemm/onednn")
    if backend == "tensorflow":
        xla = library == "keras_bert" or runtime.endswith("+xla")
        return ("gemm/tensorflow+xla",) if xla else ("gemm/tensorflow",)
    return (f"gemm/{backend}",)


def summarize(results, config):
    """Per group: median ms, speedup vs transformers, fraction of ceiling."""
    summary = {}
    for group, entries in results.items():
        dtype, shape = group.split("@")
        batch, length = map(int, shape.split("x"))
        forward_flops = flops.encoder_forward_flops(config, batch, length)
        layer_flops = flops.gemm_flops(flops.layer_gemm_shapes(
            batch * length, config["hidden_size"], config["intermediate_size"]))
        ceiling = max(
            (layer_flops / common.median_time(e) for label, e in entries.items()
             if label.startswith("gemm/") and e["times"]),
            default=None,
        )
        gemm_rates = {label: layer_flops / common.median_time(e)
                      for label, e in entries.items()
                      if label.startswith("gemm/") and e["times"]}
        rows = {}
        for label, entry in entries.items():
            row = {"error": entry["error"]}
            seconds = common.median_time(entry)
            if seconds is not None:
                rate = (layer_flops if label.startswith("gemm/")
                        else forward_flops)
                rate = rate / seconds
                row.update({
                    "ms": 1000 * seconds,
                    "gflops": rate / 1e9,
                    "fraction_of_ceiling": rate / ceiling if ceiling else None,
                    # Against the GEMM rate of its own library's kernels.
                    "fraction_of_own_gemm": (
                        rate / max([gemm_rates[g] for g in own_gemm_labels(
                            label) if g in gemm_rates], default=float("nan"))
                        if not label.startswith("gemm/") else None),
                    # Above 1: the library ran on more than one core.
                    "cpu_over_wall": (statistics.median(entry["cpu_rounds"])
                                      / statistics.median(entry["rounds"])),
                })
                if REFERENCE in entries and not label.startswith("gemm/"):
                    row["speedup_vs_transformers"] = common.paired_speedup(
                        entry, entries[REFERENCE])
                    row["cpu_speedup_vs_transformers"] = common.paired_speedup(
                        entry, entries[REFERENCE], key="cpu_rounds")
                hub = label.replace("keras_bert", "keras_hub").split("+")[0]
                if label.startswith("keras_bert/") and hub in entries:
                    row["speedup_vs_keras_hub"] = common.paired_speedup(
                        entry, entries[hub])
                    row["cpu_speedup_vs_keras_hub"] = common.paired_speedup(
                        entry, entries[hub], key="cpu_rounds")
                for baseline in BASELINES:
                    if f"{label}+{baseline}" in entries:
                        other = entries[f"{label}+{baseline}"]
                        row[f"speedup_vs_{baseline}"] = common.paired_speedup(
                            entry, other)
                        row[f"cpu_speedup_vs_{baseline}"] = (
                            common.paired_speedup(entry, other,
                                                  key="cpu_rounds"))
            rows[label] = row
        summary[group] = {"ceiling_gflops": ceiling and ceiling / 1e9,
                          "forward_gflop": forward_flops / 1e9, "rows": rows}
    return summary


def cross_dtype_speedups(results):
    """bfloat16 vs float32 of the same library and shape (paired rounds)."""
    speedups = {}
    for group, entries in results.items():
        if not group.startswith("bfloat16@"):
            continue
        float32 = results.get(group.replace("bfloat16", "float32"), {})
        for label, entry in entries.items():
            if label in float32 and entry["rounds"]:
                speedups[f"{label} {group.split('@')[1]}"] = (
                    common.paired_speedup(entry, float32[label]))
    return speedups


def format_table(summary):
    tables = {
        f"{group} (forward {info['forward_gflop']:.1f} GFLOP, GEMM ceiling "
        f"{info['ceiling_gflops'] or float('nan'):.0f} GFLOP/s)": info["rows"]
        for group, info in summary.items()}
    return common.format_rows(tables, [
        ("ms", "ms", ".1f"), ("gflops", "GFLOP/s", ".0f"),
        ("fraction_of_ceiling", "of ceiling", ".2f"),
        ("fraction_of_own_gemm", "of own GEMM", ".2f"),
        ("cpu_over_wall", "cpu / wall", ".2f"),
        ("speedup_vs_transformers", "x transformers", ".2f"),
        ("cpu_speedup_vs_transformers", "x transformers (cpu)", ".2f"),
        ("speedup_vs_keras_hub", "x keras-hub", ".2f"),
        ("cpu_speedup_vs_keras_hub", "x keras-hub (cpu)", ".2f"),
        ("speedup_vs_fused", "x fused", ".2f"),
        ("cpu_speedup_vs_fused", "x fused (cpu)", ".2f"),
        ("speedup_vs_calls", "x Keras calls", ".2f"),
        ("cpu_speedup_vs_calls", "x Keras calls (cpu)", ".2f")])


def thread_env(threads):
    """Thread settings for `threads` threads per library (None: defaults).

    Only a hint to the libraries that read them (OpenMP/MKL for PyTorch
    and NumPy, TensorFlow's pools, Eigen in XLA): XLA:CPU in JAX sizes its
    pool from the CPUs it may run on, so `--threads` also pins every
    worker to that many CPUs (`common.first_cpus`).
    """
    if not threads:
        return {}
    n = str(threads)
    return {"OMP_NUM_THREADS": n, "MKL_NUM_THREADS": n,
            "TF_NUM_INTRAOP_THREADS": n, "TF_NUM_INTEROP_THREADS": n,
            "XLA_FLAGS": "--xla_cpu_multi_thread_eigen="
                         + str(threads > 1).lower()}


def parse_shapes(text):
    return [tuple(map(int, item.split("x"))) for item in text.split(",")]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--dtypes", default=",".join(DTYPES))
    parser.add_argument("--shapes", default="1x128,8x128,32x128,8x512",
                        help="batch x length, comma separated")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=3,
                        help="timed calls per case per round")
    parser.add_argument("--torch-compile", action="store_true",
                        help="also time keras_bert on torch with "
                        "jit_compile=True (torch.compile)")
    parser.add_argument("--fused-baseline", action="store_true",
                        help="also time keras_bert forced onto "
                        "the earlier releases' kernels (ops.dot_product_"
                        "attention; on torch also Keras' Dense products)")
    parser.add_argument("--calls-baseline", action="store_true",
                        help="also time keras_bert on torch with every "
                        "sub-layer called through Keras' Layer.__call__")
    parser.add_argument("--torch-ceiling", action="store_true",
                        help="also time transformers torch.compile'd and "
                        "the same BERT on PyTorch's fused encoder kernel "
                        "(bench/torch_encoder_runtime.py)")
    parser.add_argument("--threads", type=int,
                        help="threads per worker (default: the libraries' "
                        "own, all cores)")
    parser.add_argument("--quick", action="store_true",
                        help="batch 8 x 128 only, 3 rounds")
    parser.add_argument("--output")
    args = parser.parse_args()
    if args.worker:
        return common.serve(make_prepare(args.worker))

    if args.quick:
        args.shapes, args.rounds = "8x128", 3
    backends = args.backends.split(",")
    groups = {}
    for dtype in args.dtypes.split(","):
        for batch, length in parse_shapes(args.shapes):
            labels = inference_labels(backends, args.torch_compile,
                                      args.fused_baseline,
                                      args.calls_baseline,
                                      args.torch_ceiling)
            labels += gemm_labels(backends, dtype)
            groups[f"{dtype}@{batch}x{length}"] = [
                (label, worker_for(label), case_for(label, dtype, batch, length))
                for label in labels]
    started = time.time()
    results = common.run_workers("bench.bench_inference", groups,
                                 args.rounds, args.calls,
                                 env=thread_env(args.threads),
                                 cpus=common.first_cpus(args.threads))
    config = common.read_config(common.minilm_dir())
    payload = {"machine": common.machine_info(), "args": vars(args),
               "worker_cpus": sorted(common.first_cpus(args.threads) or []),
               "minutes": (time.time() - started) / 60, "raw": results,
               "summary": summarize(results, config),
               "bf16_vs_fp32": cross_dtype_speedups(results)}
    print(format_table(payload["summary"]))
    print("\nbfloat16 speedup over float32 (paired):")
    for key, value in payload["bf16_vs_fp32"].items():
        print(f"  {key}: {value:.2f}x")
    if args.output:
        common.write_json(args.output, payload)


if __name__ == "__main__":
    main()
