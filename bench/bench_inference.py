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
  that the explicit attention path is compared with it in the same run.
* keras-hub: `keras_hub.models.BertBackbone.from_preset(dir)` (it converts
  the same Hugging Face folder, so the weights are the real ones) and
  `predict_on_batch` with its default settings (XLA on JAX only); on
  TensorFlow also with `jit_compile=True` ("tensorflow+xla") for fairness.
* transformers: `BertModel.from_pretrained(dir)` eager PyTorch (SDPA
  attention) under `torch.inference_mode()`.
* GEMM ceiling: the four weight GEMMs of one layer at the same token count,
  in NumPy, PyTorch, JAX and TensorFlow; the fastest one per dtype is the
  ceiling that model FLOP rates are divided by.

Run (about 15 minutes per shape on 2 loaded cores; `--quick` for 8 x 128
only, 3 rounds):

    python -m bench.bench_inference --dtypes float32 \
        --output /tmp/bench_results/inference.json
    python -m bench.plot_performance --results /tmp/bench_results

`--threads 1` runs every worker on one thread: the CPU-time ratios ("cpu"
columns) are then the steadiest A/B figures on a shared machine.
"""

import argparse
import time

from bench import common

BACKENDS = ("jax", "tensorflow", "torch")
SHAPES = ((1, 128), (8, 128), (32, 128), (8, 512))
DTYPES = ("float32", "bfloat16")
REFERENCE = "transformers/torch"


# Worker side -------------------------------------------------------------


def synthetic_inputs(batch, length, vocabulary_size, seed=0):
    """Full-length rows: [CLS] random ids [SEP], no padding."""
    import numpy as np

    rng = np.random.default_rng(seed)
    ids = rng.integers(1000, vocabulary_size, size=(batch, length))
    ids[:, 0], ids[:, -1] = 101, 102
    return {
        "token_ids": ids.astype("int32"),
        "segment_ids": np.zeros((batch, length), "int32"),
        "padding_mask": np.ones((batch, length), "int32"),
    }


def gemm_callable(library, dtype, tokens, hidden, intermediate):
    """One layer's four weight GEMMs (see `common.layer_gemm_shapes`)."""
    import numpy as np

    shapes = common.layer_gemm_shapes(tokens, hidden, intermediate)
    rng = np.random.default_rng(0)
    pairs = [(rng.standard_normal((m, k)).astype("float32"),
              rng.standard_normal((k, n)).astype("float32"))
             for m, k, n in shapes]
    if library == "numpy":
        if dtype != "float32":
            raise ValueError("NumPy has no fast bfloat16 GEMM")
        return lambda: [a @ b for a, b in pairs]
    if library == "torch":
        import torch

        dt = getattr(torch, dtype)
        pairs = [(torch.from_numpy(a).to(dt), torch.from_numpy(b).to(dt))
                 for a, b in pairs]

        def run():
            with torch.inference_mode():
                return [a @ b for a, b in pairs]

        return run
    if library == "jax":
        import jax
        import jax.numpy as jnp

        pairs = [(jnp.asarray(a, dtype), jnp.asarray(b, dtype))
                 for a, b in pairs]
        fn = jax.jit(lambda ps: [a @ b for a, b in ps])
        return lambda: jax.block_until_ready(fn(pairs))
    if library == "tensorflow":
        import tensorflow as tf

        pairs = [(tf.cast(a, dtype), tf.cast(b, dtype)) for a, b in pairs]
        return lambda: [tf.matmul(a, b).numpy() for a, b in pairs]
    raise ValueError(f"unknown GEMM library {library!r}")


class KerasRuntime:
    """keras_bert and keras-hub models under this process's Keras backend."""

    def __init__(self):
        self.models = {}

    def model(self, library, dtype, jit_compile, fused=False):
        key = (library, dtype, jit_compile, fused)
        if key not in self.models:
            if library == "keras_bert":
                import keras_bert

                cls = keras_bert.BertBackbone
            else:
                import keras_hub

                cls = keras_hub.models.BertBackbone
            model = cls.from_preset(common.minilm_dir(), dtype=dtype)
            if jit_compile is not None:
                model.jit_compile = jit_compile
            if fused:  # the earlier releases' attention, for comparison
                for block in model.transformer_layers:
                    block.attention._explicit_is_faster = lambda: False
            self.models[key] = model
        return self.models[key]

    def forward(self, case):
        import keras

        library, variant = case["library"], case.get("variant", "")
        backend = keras.config.backend()
        # keras_bert's best settings: XLA wherever Keras can compile.
        if library == "keras_bert":
            jit = backend != "torch" or variant == "compile"
        else:
            jit = True if variant == "xla" else None  # None: library default
        if backend == "torch" and jit:
            import torch._dynamo

            # Keras layers guard on per-instance attributes, so dynamo
            # compiles each encoder block separately; past its default
            # limit (8) it silently runs the rest eagerly.
            torch._dynamo.config.recompile_limit = 256
            torch._dynamo.config.accumulated_recompile_limit = 4096
        model = self.model(library, case["dtype"], jit, variant == "fused")
        inputs = synthetic_inputs(case["batch"], case["length"],
                                  model.vocabulary_size)
        return lambda: model.predict_on_batch(inputs)


class TransformersRuntime:
    def __init__(self):
        self.models = {}

    def forward(self, case):
        import torch
        import transformers

        dtype = case["dtype"]
        if dtype not in self.models:
            model = transformers.BertModel.from_pretrained(
                common.minilm_dir(), dtype=getattr(torch, dtype),
                local_files_only=True)
            self.models[dtype] = model.eval()
        model = self.models[dtype]
        inputs = synthetic_inputs(case["batch"], case["length"],
                                  model.config.vocab_size)
        inputs = {
            "input_ids": torch.from_numpy(inputs["token_ids"]).long(),
            "token_type_ids": torch.from_numpy(inputs["segment_ids"]).long(),
            "attention_mask": torch.from_numpy(inputs["padding_mask"]).long(),
        }

        def run():
            with torch.inference_mode():
                return model(**inputs).last_hidden_state

        return run


def make_prepare(worker):
    runtime = TransformersRuntime() if worker == "transformers" else (
        KerasRuntime())
    config = common.read_config(common.minilm_dir())

    def prepare(case):
        if case["library"] == "gemm":
            return gemm_callable(
                case["variant"], case["dtype"], case["batch"] * case["length"],
                config["hidden_size"], config["intermediate_size"])
        return runtime.forward(case)

    return prepare


# Orchestrator side -------------------------------------------------------


def worker_for(label):
    library, runtime = label.split("/")
    if library == "transformers" or label in ("gemm/numpy", "gemm/torch"):
        return "transformers"
    return "keras-" + runtime.split("+")[0]


def case_for(label, dtype, batch, length):
    library, runtime = label.split("/")
    variant = runtime.split("+")[1] if "+" in runtime else ""
    if library == "gemm":
        variant = runtime
    return {"library": library, "variant": variant, "dtype": dtype,
            "batch": batch, "length": length}


def inference_labels(backends, torch_compile, fused_baseline=False):
    labels = [REFERENCE]
    for backend in backends:
        labels.append(f"keras_bert/{backend}")
        if backend == "torch" and torch_compile:
            labels.append("keras_bert/torch+compile")
        if backend != "torch" and fused_baseline:
            labels.append(f"keras_bert/{backend}+fused")
        labels.append(f"keras_hub/{backend}")
        if backend == "tensorflow":
            labels.append("keras_hub/tensorflow+xla")
    return labels


def gemm_labels(backends, dtype):
    libraries = ["numpy"] if dtype == "float32" else []
    libraries += ["torch"] + [b for b in backends if b != "torch"]
    return [f"gemm/{name}" for name in libraries]


def summarize(results, config):
    """Per group: median ms, speedup vs transformers, fraction of ceiling."""
    summary = {}
    for group, entries in results.items():
        dtype, shape = group.split("@")
        batch, length = map(int, shape.split("x"))
        flops = common.encoder_forward_flops(config, batch, length)
        gemm_flops = common.gemm_flops(common.layer_gemm_shapes(
            batch * length, config["hidden_size"], config["intermediate_size"]))
        ceiling = max(
            (gemm_flops / common.median_time(e) for label, e in entries.items()
             if label.startswith("gemm/") and e["times"]),
            default=None,
        )
        rows = {}
        for label, entry in entries.items():
            row = {"error": entry["error"]}
            seconds = common.median_time(entry)
            if seconds is not None:
                rate = (gemm_flops if label.startswith("gemm/") else flops)
                rate = rate / seconds
                row.update({
                    "ms": 1000 * seconds,
                    "gflops": rate / 1e9,
                    "fraction_of_ceiling": rate / ceiling if ceiling else None,
                })
                if REFERENCE in entries and not label.startswith("gemm/"):
                    row["speedup_vs_transformers"] = common.paired_speedup(
                        entry, entries[REFERENCE])
                hub = label.replace("keras_bert", "keras_hub").split("+")[0]
                if label.startswith("keras_bert/") and hub in entries:
                    row["speedup_vs_keras_hub"] = common.paired_speedup(
                        entry, entries[hub])
                    row["cpu_speedup_vs_keras_hub"] = common.paired_speedup(
                        entry, entries[hub], key="cpu_rounds")
                fused = label + "+fused"
                if fused in entries:
                    for key, name in (("rounds", "speedup_vs_fused"),
                                      ("cpu_rounds", "cpu_speedup_vs_fused")):
                        row[name] = common.paired_speedup(
                            entry, entries[fused], key=key)
            rows[label] = row
        summary[group] = {"ceiling_gflops": ceiling and ceiling / 1e9,
                          "forward_gflop": flops / 1e9, "rows": rows}
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
        ("speedup_vs_transformers", "x transformers", ".2f"),
        ("speedup_vs_keras_hub", "x keras-hub", ".2f"),
        ("cpu_speedup_vs_keras_hub", "x keras-hub (cpu)", ".2f"),
        ("speedup_vs_fused", "x fused", ".2f"),
        ("cpu_speedup_vs_fused", "x fused (cpu)", ".2f")])


def thread_env(threads):
    if not threads:
        return {}
    n = str(threads)
    return {"OMP_NUM_THREADS": n, "MKL_NUM_THREADS": n,
            "TF_NUM_INTRAOP_THREADS": n, "TF_NUM_INTEROP_THREADS": n,
            "XLA_FLAGS": f"--xla_cpu_multi_thread_eigen={threads > 1} "
                         f"intra_op_parallelism_threads={n}".lower()}


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
                        "ops.dot_product_attention (JAX, TensorFlow)")
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
                                      args.fused_baseline)
            labels += gemm_labels(backends, dtype)
            groups[f"{dtype}@{batch}x{length}"] = [
                (label, worker_for(label), case_for(label, dtype, batch, length))
                for label in labels]
    started = time.time()
    results = common.run_workers("bench.bench_inference", groups,
                                 args.rounds, args.calls,
                                 env=thread_env(args.threads))
    config = common.read_config(common.minilm_dir())
    payload = {"machine": common.machine_info(), "args": vars(args),
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
