"""Tokenizer benchmark: speed and parity against `transformers`.

Speed (default): sentences/s of tokenization + packing to 128 tokens on the
SST-2 train sentences, keras_bert's `BertPreprocessor` in a `tf.data`
pipeline vs `transformers`' `BertTokenizerFast` (Rust, batched, NumPy
output) on the same sentences in the same process; medians over repeats.
Writes the table to the "## Tokenization" section of docs/performance.md.

Parity (`--parity`): token ids (and character offsets) of every text of
SST-2, MRPC, CoNLL-2003 and the SQuAD contexts, and of the hard strings in
tests/preprocessing/parity_data.py, compared with `BertTokenizerFast` on the
all-MiniLM-L6-v2 vocabulary. Prints a Markdown table and every difference.

Run from the repository root:

    .venv/bin/python bench/bench_tokenizer.py [--repeats 5] [--no-write]
    .venv/bin/python bench/bench_tokenizer.py --parity
"""

import argparse
import os
import platform
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import tensorflow as tf  # noqa: E402

from bench.common import write_section  # noqa: E402
from keras_bert.preprocessing import BertPreprocessor  # noqa: E402
from keras_bert.preprocessing import BertTokenizer  # noqa: E402
from tests.preprocessing import parity_data  # noqa: E402

SEQUENCE_LENGTH = 128
PERFORMANCE_DOC = os.path.join(ROOT, "docs", "performance.md")
SECTION = "## Tokenization"


def _timed(run):
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def _paired_rates(ours_run, theirs_run, count, repeats):
    """Interleaved: each repeat times both, in an order alternated every
    repeat, so both see the same machine load. Returns the median rates and
    the median over repeats of the per-repeat ratio (ours / theirs rate)."""
    ours_run()  # warm-up: tracing, thread pools
    theirs_run()
    ours, theirs = [], []
    for r in range(repeats):
        if r % 2:
            theirs.append(_timed(theirs_run))
            ours.append(_timed(ours_run))
        else:
            ours.append(_timed(ours_run))
            theirs.append(_timed(theirs_run))
    ratio = statistics.median(t / o for o, t in zip(ours, theirs))
    return (count / statistics.median(ours), count / statistics.median(theirs),
            ratio)


def measure_speed(sentences, batch_size, repeats):
    tokenizer = BertTokenizer(parity_data.MINILM_VOCABULARY)
    preprocessor = BertPreprocessor(tokenizer, sequence_length=SEQUENCE_LENGTH)
    reference = parity_data.reference_tokenizer()
    dataset = (
        tf.data.Dataset.from_tensor_slices(sentences)
        .batch(batch_size)
        .map(preprocessor, num_parallel_calls=tf.data.AUTOTUNE)
        .prefetch(tf.data.AUTOTUNE)
    )

    def keras_bert_run():
        for _ in dataset:
            pass

    def transformers_run():
        for start in range(0, len(sentences), batch_size):
            reference(
                sentences[start:start + batch_size],
                truncation=True,
                max_length=SEQUENCE_LENGTH,
                padding="max_length",
                return_tensors="np",
            )

    return _paired_rates(keras_bert_run, transformers_run, len(sentences),
                         repeats)


def speed(args):
    sentences = parity_data.sst2_sentences(splits=("train",))
    rows, results = [], []
    load_before = os.getloadavg()
    for batch_size in args.batch_sizes:
        ours, theirs, ratio = measure_speed(sentences, batch_size,
                                            args.repeats)
        results.append({"batch_size": batch_size, "keras_bert": ours,
                        "transformers": theirs, "ratio": ratio})
        rows.append(f"| {batch_size} | {ours:,.0f} | {theirs:,.0f} | "
                    f"{ratio:.2f}x |")
        print(rows[-1], flush=True)
    table = "\n".join([
        SECTION,
        "",
        "Tokenization + packing to 128 tokens (`token_ids`, `segment_ids`, "
        "`padding_mask`) of the 60,614 SST-2 train sentences, sentences per "
        f"second, median of {args.repeats} runs after a warm-up, the two "
        "libraries timed alternately in each repeat; ratio = median over "
        "repeats of the per-repeat ratio (above 1: keras_bert faster). "
        "keras_bert: "
        "`BertPreprocessor` mapped over batches in a `tf.data` pipeline "
        "(`num_parallel_calls=AUTOTUNE`). transformers: `BertTokenizerFast` "
        "called on the same batches (`truncation=True, padding='max_length',"
        " return_tensors='np'`). Same process, same machine "
        f"({os.cpu_count()} CPU cores, {platform.machine()}; TensorFlow "
        f"{tf.__version__}; load average {load_before[0]:.1f} before, "
        f"{os.getloadavg()[0]:.1f} after).",
        "",
        "| batch size | keras_bert (sentences/s) | BertTokenizerFast "
        "(sentences/s) | ratio |",
        "| ---: | ---: | ---: | ---: |",
        *rows,
        "",
        "Reproduce: `.venv/bin/python bench/bench_tokenizer.py "
        f"--repeats {args.repeats}`.",
        "",
    ])
    if args.write:
        write_section(PERFORMANCE_DOC, SECTION, table)
    if args.output:
        import json

        os.makedirs(os.path.dirname(os.path.abspath(args.output)),
                    exist_ok=True)
        with open(args.output, "w") as f:
            json.dump({"repeats": args.repeats, "rows": results,
                       "load_average": [load_before[0], os.getloadavg()[0]]},
                      f, indent=1)
    print(table)


def _compare(tokenizer, reference, texts):
    """Returns (ids mismatches, offsets mismatches) as lists of indices."""
    ours = tokenizer(texts).to_list()
    ids, starts, ends = tokenizer.tokenize_with_offsets(texts)
    ours_offsets = [list(zip(s, e)) for s, e in
                    zip(starts.to_list(), ends.to_list())]
    encoded = reference(texts, add_special_tokens=False,
                        return_offsets_mapping=True)
    id_diffs = [i for i, (a, b) in enumerate(zip(ours, encoded["input_ids"]))
                if a != b]
    offset_diffs = [
        i for i, (a, b) in enumerate(zip(ours_offsets,
                                         encoded["offset_mapping"]))
        if a != [tuple(o) for o in b]
    ]
    offsets_ids_agree = ids.to_list() == ours
    return id_diffs, offset_diffs, encoded["input_ids"], ours, \
        offsets_ids_agree


def parity(args):
    tokenizer = BertTokenizer(parity_data.MINILM_VOCABULARY)
    reference = parity_data.reference_tokenizer()
    texts = parity_data.dataset_texts()
    texts["hard strings"] = parity_data.HARD_STRINGS
    print("| texts | count | identical ids | identical offsets |")
    print("| --- | ---: | ---: | ---: |")
    details = []
    for name, items in texts.items():
        id_diffs, offset_diffs, theirs, ours, agree = _compare(
            tokenizer, reference, items)
        n = len(items)
        print(f"| {name} | {n:,} | {n - len(id_diffs):,} "
              f"({100 * (n - len(id_diffs)) / n:.3f}%) | "
              f"{n - len(offset_diffs):,} "
              f"({100 * (n - len(offset_diffs)) / n:.3f}%) |")
        if not agree:
            details.append(f"{name}: tokenize_with_offsets ids differ from "
                           "tokenize")
        for i in id_diffs[:20]:
            details.append(f"{name} #{i}: {items[i]!r}\n  ours  {ours[i]}\n"
                           f"  theirs {theirs[i]}")
    print("\n".join(details) or "no differences")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--parity", action="store_true")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batch-sizes", type=int, nargs="+",
                        default=[32, 256, 1024])
    parser.add_argument("--no-write", dest="write", action="store_false")
    parser.add_argument("--output", help="also write the rows as JSON")
    args = parser.parse_args()
    parity(args) if args.parity else speed(args)


if __name__ == "__main__":
    main()
