"""Realistic text: SST-2 dev sentences through tokenizer + model, sentences/s.

Fixed padding (every sentence packed to length 128, batches of 32) against
length bucketing (`BertBackbone.predict_bucketed`: rows sorted by length,
each batch cut to the smallest bucket that holds it). Tokenization is inside
the timed pass in both: keras_bert's `BertPreprocessor` (TensorFlow text
ops, on every backend) for keras_bert, the `tokenizers` fast tokenizer for
transformers ("dynamic": sorted and padded to each batch's longest row,
which eager PyTorch can do without recompiling). Models and settings as in
`bench/bench_inference.py`; the first `--sentences` rows of dev.tsv.

    python -m bench.bench_sst2 --output bench/results/sst2.json
"""

import argparse
import time

from bench import common
from bench.bench_inference import BACKENDS
from bench.bench_inference import REFERENCE
from bench.bench_inference import KerasRuntime
from bench.bench_inference import TransformersRuntime
from bench.bench_inference import worker_for


def read_sst2(count):
    with open(common.SST2_DEV) as f:
        next(f)  # header
        sentences = [line.rsplit("\t", 1)[0].strip() for line in f]
    return sentences[:count]


def sst2_keras(runtime, case, batch_size=32):
    """Tokenize with keras_bert's preprocessor (fixed length 128), then run
    the model batch by batch (fixed) or with `predict_bucketed`."""
    import keras
    import numpy as np

    from keras_bert.preprocessing import BertPreprocessor

    model = runtime.model("keras_bert", case["dtype"],
                          keras.config.backend() != "torch")
    preprocessor = BertPreprocessor.from_preset(common.minilm_dir(),
                                                sequence_length=128)
    sentences = read_sst2(case["sentences"])

    def run():
        x = preprocessor(sentences)
        if case["padding"] == "bucketed":
            return model.predict_bucketed(x, batch_size=batch_size)
        x = {k: np.asarray(keras.ops.convert_to_numpy(v)) for k, v in x.items()}
        for start in range(0, len(sentences), batch_size):
            model.predict_on_batch(
                {k: v[start:start + batch_size] for k, v in x.items()})

    return run


def sst2_transformers(runtime, case, batch_size=32):
    """The same with the fast `tokenizers` tokenizer; dynamic = sorted by
    length and padded to each batch's longest row (eager needs no buckets)."""
    import torch
    import transformers

    runtime.forward({**case, "batch": 1, "length": 8})  # loads the model
    model = runtime.models[case["dtype"]]
    tokenizer = transformers.AutoTokenizer.from_pretrained(
        common.minilm_dir(), local_files_only=True)
    sentences = read_sst2(case["sentences"])

    def run():
        if case["padding"] == "fixed":
            encoded = tokenizer(sentences, padding="max_length",
                                truncation=True, max_length=128,
                                return_tensors="pt")
            batches = [{k: v[i:i + batch_size] for k, v in encoded.items()}
                       for i in range(0, len(sentences), batch_size)]
        else:
            encoded = tokenizer(sentences, truncation=True, max_length=128)
            rows = [dict(zip(encoded, values))
                    for values in zip(*encoded.values())]
            rows.sort(key=lambda row: len(row["input_ids"]))
            batches = [tokenizer.pad(rows[i:i + batch_size],
                                     return_tensors="pt")
                       for i in range(0, len(rows), batch_size)]
        with torch.inference_mode():
            for batch in batches:
                model(**batch)

    return run


def make_prepare(worker):
    if worker == "transformers":
        runtime = TransformersRuntime()
        return lambda case: sst2_transformers(runtime, case)
    runtime = KerasRuntime()
    return lambda case: sst2_keras(runtime, case)


def sst2_groups(backends, dtypes, sentences):
    groups = {}
    for dtype in dtypes:
        members = []
        for label in [REFERENCE] + [f"keras_bert/{b}" for b in backends]:
            paddings = ("fixed", "dynamic" if label == REFERENCE
                        else "bucketed")
            for padding in paddings:
                members.append((f"{label} {padding}", worker_for(label), {
                    "library": "sst2", "padding": padding, "dtype": dtype,
                    "sentences": sentences}))
        groups[f"sst2 {sentences} sentences {dtype}"] = members
    return groups


def sst2_summary(results, sentences):
    summary = {}
    for group, entries in results.items():
        rows = {}
        for label, entry in entries.items():
            seconds = common.median_time(entry)
            row = {"error": entry["error"],
                   "sentences_per_s": seconds and sentences / seconds}
            fixed = entries.get(label.rsplit(" ", 1)[0] + " fixed")
            if fixed is not None and fixed is not entry:
                row["speedup_vs_fixed"] = common.paired_speedup(entry, fixed)
            rows[label] = row
        summary[group] = rows
    return summary


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--dtypes", default="float32")
    parser.add_argument("--sentences", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=1)
    parser.add_argument("--output")
    args = parser.parse_args()
    if args.worker:
        return common.serve(make_prepare(args.worker))

    groups = sst2_groups(args.backends.split(","), args.dtypes.split(","),
                         args.sentences)
    started = time.time()
    results = common.run_workers("bench.bench_sst2", groups, args.rounds,
                                 args.calls)
    summary = sst2_summary(results, args.sentences)
    print(common.format_rows(summary, [
        ("sentences_per_s", "sentences/s", ".0f"),
        ("speedup_vs_fixed", "x fixed padding", ".2f")]))
    if args.output:
        common.write_json(args.output, {
            "machine": common.machine_info(), "args": vars(args),
            "minutes": (time.time() - started) / 60, "summary": summary,
            "raw": results})


if __name__ == "__main__":
    main()
