"""float32, bfloat16 and int8 inference side by side: keras_bert vs transformers.

all-MiniLM-L6-v2 at one shape (default 8 x 128), every precision of every
library in one group, interleaved round by round (`bench/common.py`), so a
precision's speed-up over its own float32 and its ratio to transformers'
same precision are paired within rounds:

* keras_bert: `BertBackbone.from_preset(dir, dtype="bfloat16")`, or the
  float32 model after `quantize("int8")` (Keras int8: weights per output
  channel, activations per token at run time); XLA on JAX and TensorFlow,
  eager PyTorch, as in `bench/bench_inference.py`; "torch-compile" is the
  PyTorch model with `jit_compile=True` (Keras compiles its predict step
  with `torch.compile`).
* transformers: `BertModel` in float32, in bfloat16 (`dtype=torch.bfloat16`)
  and after PyTorch's dynamic int8 quantization of every `nn.Linear`
  (`torch.ao.quantization.quantize_dynamic`), under `torch.inference_mode()`;
  "transformers/torch-compile" is the same model after `torch.compile`.
  "tensorflow-no-xla" is the TensorFlow model with `jit_compile=False`
  (TensorFlow's oneDNN kernels, which use AMX for bfloat16, instead of XLA).
* served: with `--served`, the SavedModel `keras_bert.export_saved_model`
  writes for each precision (its `serving_packed` signature, loaded with
  `tf.saved_model.load`), to check that export keeps the speed: with the
  default `jit_compile="auto"` (XLA for int8 only) and, as "served
  SavedModel-xla", with `jit_compile=True`.
* GEMM ceiling per precision: one layer's four weight GEMMs in PyTorch,
  JAX and TensorFlow (int8: int8 x int8 -> int32), the fastest per
  precision.

`--accuracy PRESET` scores a fine-tuned classifier preset (keras_bert
format, e.g. `keras-bert finetune ... --output runs/sst2` -> runs/sst2/best)
on the 872 SST-2 dev sentences (`sst2/test.tsv`) in every precision on each
backend, and transformers' `BertForSequenceClassification` on the same
weights (exported with `export_to_huggingface`) in its three precisions.

    python -m bench.bench_precision --served --accuracy runs/sst2/best \\
        --output /tmp/bench_results/precision.json --write-docs
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from bench import bench_inference
from bench import common
from bench import flops
from bench.keras_runtime import allow_torch_recompiles
from bench.keras_runtime import from_preset_in
from bench.transformers_runtime import dynamic_int8

BACKENDS = ("jax", "tensorflow", "torch")
DTYPES = ("float32", "bfloat16", "int8")
DOCS = os.path.join(common.REPO_ROOT, "docs", "performance.md")
SECTION = "### float32, bfloat16 and int8"


# Worker side -------------------------------------------------------------


def served_forward(case):
    """The exported SavedModel of the model in `case["dtype"]`, served."""
    import tensorflow as tf

    import keras_bert

    model = from_preset_in(keras_bert.BertBackbone, common.minilm_dir(),
                           case["dtype"])
    path = os.path.join(tempfile.mkdtemp(), "served")
    keras_bert.export_saved_model(
        model, path, include_preprocessing=False, verbose=False,
        jit_compile=True if case["variant"] == "xla" else "auto")
    serve = tf.saved_model.load(path).signatures["serving_packed"]
    inputs = {name: tf.constant(value) for name, value in
              common.synthetic_inputs(case["batch"], case["length"],
                                      model.vocabulary_size).items()}
    return lambda: serve(**inputs)["sequence_output"].numpy()


def make_prepare(worker):
    """`bench_inference`'s models and GEMMs, plus the served SavedModels."""
    prepare_inference = bench_inference.make_prepare(worker)

    def prepare(case):
        if case["library"] == "served":
            return served_forward(case)
        return prepare_inference(case)

    return prepare


# Accuracy ----------------------------------------------------------------


def sst2_dev():
    from keras_bert.preprocessing.tasks import read_table

    dev = read_table(os.path.join(os.path.dirname(common.SST2_DEV),
                                  "test.tsv"), ["sentence"], "label")
    return list(dev["texts"][0]), [int(label) for label in dev["labels"]]


def keras_accuracy(preset, compiled=False):
    """{dtype: SST-2 dev accuracy} of the preset under this backend
    (`compiled`: with `jit_compile=True`, i.e. torch.compile on PyTorch)."""
    import keras
    import numpy as np

    import keras_bert

    texts, labels = sst2_dev()
    if compiled:
        allow_torch_recompiles()
    scores = {}
    for dtype in DTYPES:
        model = from_preset_in(keras_bert.BertClassifier, preset, dtype)
        if keras.config.backend() == "torch":
            # Presets fine-tuned before 0.1.0 saved XLA's jit_compile=True.
            model.jit_compile = compiled
        logits = keras.ops.convert_to_numpy(model.predict(
            texts, batch_size=32, verbose=0))
        scores[dtype] = float(np.mean(logits.argmax(-1) == labels))
    return scores


def transformers_accuracy(preset):
    import numpy as np
    import torch
    import transformers

    import keras_bert
    from keras_bert.checkpoints import export_to_huggingface

    hf_dir = os.path.join(tempfile.mkdtemp(), "hf")
    export_to_huggingface(keras_bert.BertClassifier.from_preset(preset),
                          hf_dir)
    tokenizer = transformers.BertTokenizerFast.from_pretrained(hf_dir)
    texts, labels = sst2_dev()
    scores = {}
    for dtype in DTYPES:
        model = transformers.BertForSequenceClassification.from_pretrained(
            hf_dir, dtype=torch.bfloat16 if dtype == "bfloat16"
            else torch.float32).eval()
        if dtype == "int8":
            model = dynamic_int8(model)
        predictions = []
        with torch.inference_mode():
            for start in range(0, len(texts), 32):
                batch = tokenizer(texts[start:start + 32], padding=True,
                                  truncation=True, max_length=128,
                                  return_tensors="pt")
                predictions += model(**batch).logits.argmax(-1).tolist()
        scores[dtype] = float(np.mean(np.array(predictions) == labels))
    return scores


def accuracy_workers(backends, torch_compile):
    """{accuracy table label: worker name}, in the table's order."""
    names = ["transformers"] + list(backends)
    if torch_compile and "torch" in backends:
        names.append("torch-compile")
    return {("transformers/torch" if name == "transformers"
             else f"keras_bert/{name}"): name for name in names}


def accuracy_table(preset, backends, torch_compile=False):
    """Runs each library in its own process; {label: {dtype: accuracy}}."""
    table = {}
    for label, name in accuracy_workers(backends, torch_compile).items():
        env = dict(os.environ, **common.WORKER_ENV)
        if name != "transformers":
            env["KERAS_BACKEND"] = name.split("-")[0]
        result = subprocess.run(
            [sys.executable, "-m", "bench.bench_precision",
             "--accuracy-worker", name, "--accuracy", preset],
            cwd=common.REPO_ROOT, env=env, capture_output=True, text=True)
        if result.returncode:
            raise RuntimeError(f"{name}: {result.stderr[-2000:]}")
        table[label] = json.loads(result.stdout.strip().splitlines()[-1])
    return table


# Orchestrator side -------------------------------------------------------


def members(backends, dtypes, batch, length, served, torch_compile):
    rows = []
    for dtype in dtypes:
        shape = {"dtype": dtype, "batch": batch, "length": length}
        rows.append((f"transformers/torch {dtype}", "transformers",
                     {"library": "transformers", "variant": "", **shape}))
        compiled = torch_compile and "torch" in backends
        # PyTorch's dynamic int8 modules are eager kernels (FBGEMM).
        if compiled and dtype != "int8":
            rows.append((f"transformers/torch-compile {dtype}",
                         "transformers", {"library": "transformers",
                                          "variant": "compile", **shape}))
        for backend in backends:
            rows.append((f"keras_bert/{backend} {dtype}", f"keras-{backend}",
                         {"library": "keras_bert", "variant": "", **shape}))
            if backend == "torch" and compiled:
                rows.append((f"keras_bert/torch-compile {dtype}",
                             "keras-torch", {"library": "keras_bert",
                                             "variant": "compile", **shape}))
            if backend == "tensorflow":
                # TensorFlow's own kernels (oneDNN) instead of XLA's.
                rows.append((f"keras_bert/tensorflow-no-xla {dtype}",
                             "keras-tensorflow", {"library": "keras_bert",
                                                  "variant": "noxla",
                                                  **shape}))
        if served:
            for variant, suffix in (("", ""), ("xla", "-xla")):
                rows.append((f"served SavedModel{suffix} {dtype}",
                             "keras-tensorflow",
                             {"library": "served", "variant": variant,
                              **shape}))
        for library in ("torch", "onednn", "jax", "tensorflow"):
            if dtype == "int8" and library == "onednn":
                continue
            worker = ("transformers" if library in ("torch", "onednn")
                      else f"keras-{library}")
            rows.append((f"gemm/{library} {dtype}", worker,
                         {"library": "gemm", "variant": library, **shape}))
    return rows


def summarize(entries, config, batch, length):
    model_flops = flops.encoder_forward_flops(config, batch, length)
    layer_flops = flops.gemm_flops(flops.layer_gemm_shapes(
        batch * length, config["hidden_size"], config["intermediate_size"]))
    ceilings = {}
    for label, entry in entries.items():
        if label.startswith("gemm/") and entry["times"]:
            dtype = label.split()[-1]
            rate = layer_flops / common.median_time(entry)
            ceilings[dtype] = max(ceilings.get(dtype, 0), rate)
    rows = {}
    for label, entry in entries.items():
        name, dtype = label.rsplit(" ", 1)
        seconds = common.median_time(entry)
        row = {"error": entry["error"]}
        if seconds is not None:
            rate = (layer_flops if name.startswith("gemm/")
                    else model_flops) / seconds
            row.update({"ms": 1000 * seconds, "gflops": rate / 1e9,
                        "of_ceiling": rate / ceilings[dtype]
                        if dtype in ceilings else None})
            own = entries.get(f"{name} float32")
            if dtype != "float32" and own and own["rounds"]:
                row["vs_own_float32"] = common.paired_speedup(entry, own)
            for key, reference in (("vs_transformers", "torch"),
                                   ("vs_transformers_compile",
                                    "torch-compile")):
                reference = entries.get(f"transformers/{reference} {dtype}")
                if (not name.startswith(("gemm/", "transformers"))
                        and reference and reference["rounds"]):
                    row[key] = common.paired_speedup(entry, reference)
        rows[label] = row
    return rows, {k: v / 1e9 for k, v in ceilings.items()}


def format_docs(payload):
    machine = payload["machine"]
    args = payload["args"]
    lines = [
        args.get("section") or SECTION, "",
        f"Written by `python -m bench.bench_precision` "
        f"(`--shape {args['shape']} --rounds {args['rounds']} --calls "
        f"{args['calls']}{' --served' if args['served'] else ''}"
        f"{' --torch-compile' if args.get('torch_compile') else ''}`), "
        f"{time.strftime('%Y-%m-%d', time.gmtime(payload['started']))}: "
        f"{machine['cores']} cores, {machine['cpu']}; ISA flags "
        f"{', '.join(machine['isa'])}; 1-minute load average "
        f"{machine['load_average_at_start']} before, "
        f"{payload['load_after']:.1f} after. transformers' malloc: "
        + common.MALLOC_WORDS[args.get("reference_malloc", "default")]
        + ". Milliseconds per forward "
        "(median of all timed calls); speed-ups are medians over rounds "
        "of same-round ratios (above 1: faster). GEMM ceilings (GFLOP/s): "
        + ", ".join(f"{k} {v:.0f}" for k, v in payload["ceilings"].items())
        + ".",
    ]
    lines.append(common.format_rows({"": payload["rows"]}, [
        ("ms", "ms", ".1f"), ("gflops", "GFLOP/s", ".0f"),
        ("of_ceiling", "of its precision's ceiling", ".2f"),
        ("vs_own_float32", "x own float32", ".2f"),
        ("vs_transformers", "x transformers, same precision", ".2f"),
        ("vs_transformers_compile", "x compiled transformers", ".2f"),
    ]).replace("\n### \n", "\n"))
    if payload.get("accuracy"):
        lines += ["", f"SST-2 dev accuracy (872 sentences) of the classifier "
                  f"`{payload['args']['accuracy']}` in each precision:", "",
                  "| library/backend | " + " | ".join(DTYPES) + " |",
                  "|---" * (len(DTYPES) + 1) + "|"]
        for label, scores in payload["accuracy"].items():
            lines.append(f"| {label} | " + " | ".join(
                f"{100 * scores[d]:.2f}" for d in DTYPES) + " |")
    return "\n".join(lines) + "\n"


def in_run_order(payload):
    """`payload` read back from JSON (keys sorted) in the order of a run."""
    args = payload["args"]
    batch, length = map(int, args["shape"].split("x"))
    backends = args["backends"].split(",")
    order = [label for label, _, _ in members(
        backends, args["dtypes"].split(","), batch, length, args["served"],
        args.get("torch_compile"))]
    payload["rows"] = {label: payload["rows"][label] for label in order
                       if label in payload["rows"]}
    payload["ceilings"] = {dtype: payload["ceilings"][dtype]
                           for dtype in DTYPES if dtype in payload["ceilings"]}
    if payload.get("accuracy"):
        labels = accuracy_workers(backends, args.get("torch_compile"))
        payload["accuracy"] = {label: payload["accuracy"][label]
                               for label in labels
                               if label in payload["accuracy"]}
    return payload


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--accuracy-worker", help=argparse.SUPPRESS)
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--dtypes", default=",".join(DTYPES))
    parser.add_argument("--shape", default="8x128", help="batch x length")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--served", action="store_true",
                        help="also time the exported SavedModels")
    parser.add_argument("--torch-compile", action="store_true",
                        help="also time keras_bert and transformers on torch "
                        "with torch.compile")
    parser.add_argument("--accuracy", metavar="PRESET",
                        help="a fine-tuned SST-2 classifier preset to score")
    common.add_reference_malloc_argument(parser)
    parser.add_argument("--output")
    parser.add_argument("--write-docs", action="store_true",
                        help="replace --section in docs/performance.md")
    parser.add_argument("--section", default=SECTION,
                        help="the docs heading to write (one per machine "
                        "kind: the tables of other CPUs stay)")
    parser.add_argument("--render", metavar="JSON",
                        help="write the docs section of an earlier --output "
                        "(in the run's row order; the whole section is "
                        "replaced, prose below the table too)")
    args = parser.parse_args()
    if args.render:
        with open(args.render) as f:
            payload = json.load(f)
        payload["args"]["section"] = args.section
        return common.write_section(DOCS, args.section,
                                    format_docs(in_run_order(payload)))
    if args.worker:
        return common.serve(make_prepare(args.worker))
    if args.accuracy_worker:
        if args.accuracy_worker == "transformers":
            score = transformers_accuracy(args.accuracy)
        else:
            score = keras_accuracy(args.accuracy, compiled=args.accuracy_worker
                                   == "torch-compile")
        print(json.dumps(score))
        return None

    backends = args.backends.split(",")
    batch, length = map(int, args.shape.split("x"))
    started = time.time()
    payload = {"machine": common.machine_info(), "args": vars(args),
               "started": started}
    if args.accuracy:
        payload["accuracy"] = accuracy_table(args.accuracy, backends,
                                             args.torch_compile)
        print(json.dumps(payload["accuracy"], indent=1))
    group = members(backends, args.dtypes.split(","), batch, length,
                    args.served, args.torch_compile)
    results = common.run_workers(
        "bench.bench_precision", {"all": group}, args.rounds, args.calls,
        reference_malloc=args.reference_malloc)["all"]
    config = common.read_config(common.minilm_dir())
    payload["rows"], payload["ceilings"] = summarize(results, config, batch,
                                                     length)
    payload.update(raw=results, load_after=os.getloadavg()[0],
                   minutes=(time.time() - started) / 60)
    text = format_docs(payload)
    print(text)
    if args.output:
        common.write_json(args.output, payload)
    if args.write_docs:
        common.write_section(DOCS, args.section, text)
    return None


if __name__ == "__main__":
    main()
