"""Encoding throughput: `BertTextEmbedder.encode` against
sentence-transformers `encode`, all-MiniLM-L6-v2, same CPU, one run.

    .venv/bin/python -m bench.bench_encode --rounds 3 \
        --output /tmp/bench_results/encode.json

Each library/backend is a worker process (`bench/common.py`); the workers
are timed in turn, round after round, so they share the load's drift.
A call encodes a whole set of texts, start to finish (tokenization,
length sorting or keras_bert's shared rows, batches, vectors back as
NumPy): `--sentences`
SST-2 dev sentences (short) and `--paragraphs` SQuAD dev paragraphs
(long, up to the model's 256 tokens). `--batch-size default` (the
default) leaves each library's `encode` its own batch size, as a user
calls it (keras_bert 64 texts a call, sentence-transformers 32);
`--batch-size 32` gives both 32. Each library makes `--calls` calls
a round (3; a round's figure is their median). Reported: texts per
second (median over rounds) and the paired ratio to sentence-transformers
float32.
float32 on both sides is the comparison that matters (the vectors agree
to 1e-5); bfloat16 rows (keras_bert `dtype="bfloat16"`,
sentence-transformers `model.bfloat16()`) and int8 rows (keras_bert
`quantize("int8")`, sentence-transformers after PyTorch's dynamic int8
quantization of every `nn.Linear`) are extra, and change the vectors by
about 1e-2. `--torch-compile` adds keras_bert on PyTorch with
`jit_compile=True` ("torch-compile": Keras runs the predict step through
`torch.compile`), float32 and bfloat16 (int8 compiled runs no faster than
eager: docs/performance.md).
`--one-per-row` adds keras_bert with `share_rows=False` (one text a row,
length buckets: the path before shared rows).
"""

import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import common  # noqa: E402
from bench import retrieval_data  # noqa: E402
from bench.keras_runtime import allow_torch_recompiles  # noqa: E402
from bench.keras_runtime import from_preset_in  # noqa: E402
from bench.transformers_runtime import dynamic_int8  # noqa: E402

BACKENDS = ("jax", "tensorflow", "torch")
REFERENCE = "sentence-transformers float32"


def read_texts(kind, count):
    if kind == "paragraphs":
        return retrieval_data.read_retrieval_set(retrieval_data.DEV)[2][:count]
    with open(os.path.join(retrieval_data.DATA, "sst2", "dev.tsv"),
              encoding="utf-8") as handle:
        return [line.split("\t")[0] for line in handle][1:count + 1]


def batch_argument(case):
    batch = case.get("batch", "default")
    return {} if batch == "default" else {"batch_size": int(batch)}


def prepare_keras(case):
    import keras_bert

    model = from_preset_in(keras_bert.BertTextEmbedder, common.minilm_dir(),
                           case["dtype"])
    if case.get("variant") == "compile":
        allow_torch_recompiles()
        model.jit_compile = True
    texts = read_texts(case["texts"], case["count"])
    share_rows = case.get("variant") != "one-per-row"
    return lambda: model.encode(texts, verbose=0, share_rows=share_rows,
                                **batch_argument(case))


def prepare_sentence_transformers(case):
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(common.minilm_dir(), device="cpu")
    if case["dtype"] == "bfloat16":
        model.bfloat16()
    if case["dtype"] == "int8":
        model = dynamic_int8(model)
    texts = read_texts(case["texts"], case["count"])
    return lambda: model.encode(texts, **batch_argument(case))


def groups(args):
    result = {}
    for kind, count in (("sentences", args.sentences),
                        ("paragraphs", args.paragraphs)):
        if not count:
            continue
        members = []
        for dtype in args.dtypes.split(","):
            case = {"texts": kind, "count": count, "dtype": dtype,
                    "batch": args.batch_size}
            members.append((f"sentence-transformers {dtype}",
                            "sentence_transformers", case))
            members += [(f"keras_bert/{backend} {dtype}", f"keras-{backend}",
                         case) for backend in args.backends.split(",")]
            if args.one_per_row:
                members += [
                    (f"keras_bert/{backend} {dtype} one text a row",
                     f"keras-{backend}", {**case, "variant": "one-per-row"})
                    for backend in args.backends.split(",")]
            if (args.torch_compile and dtype != "int8"
                    and "torch" in args.backends.split(",")):
                members.append((f"keras_bert/torch-compile {dtype}",
                                "keras-torch", {**case, "variant": "compile"}))
        result[f"{count} {kind}"] = members
    return result


def summarize(results, args):
    table = {}
    for group, rows in results.items():
        count = int(group.split()[0])
        reference = rows.get(REFERENCE, {})
        table[group] = {}
        for label, entry in rows.items():
            if entry["error"] or not entry["rounds"]:
                table[group][label] = {"error": entry["error"]}
                continue
            row = {"texts_per_second": round(
                count / statistics.median(entry["rounds"]), 1)}
            if reference.get("rounds") and label != REFERENCE:
                row["vs_sentence_transformers"] = round(
                    common.paired_speedup(entry, reference), 2)
            table[group][label] = row
    return table


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worker")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=3,
                        help="timed calls per library per round (the "
                        "round's figure is their median)")
    parser.add_argument("--sentences", type=int, default=512)
    parser.add_argument("--paragraphs", type=int, default=128)
    parser.add_argument("--batch-size", default="default",
                        help="texts a call for every library, or 'default' "
                        "(each library's own)")
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--dtypes", default="float32,bfloat16,int8")
    parser.add_argument("--torch-compile", action="store_true",
                        help="also keras_bert on torch with jit_compile=True")
    parser.add_argument("--one-per-row", action="store_true",
                        help="also keras_bert with share_rows=False (length "
                             "buckets, one text a row)")
    common.add_reference_malloc_argument(parser)
    parser.add_argument("--output")
    args = parser.parse_args()
    if args.worker:
        common.serve(prepare_sentence_transformers
                     if args.worker == "sentence_transformers"
                     else prepare_keras)
        return
    machine = common.machine_info()
    results = common.run_workers("bench.bench_encode", groups(args),
                                 args.rounds, calls=args.calls,
                                 reference_malloc=args.reference_malloc)
    payload = {"machine": machine, "args": vars(args),
               "table": summarize(results, args), "raw": results,
               "load_average_at_end": round(os.getloadavg()[0], 2)}
    print(json.dumps(payload["table"], indent=1))
    if args.output:
        common.write_json(args.output, payload)


if __name__ == "__main__":
    main()
