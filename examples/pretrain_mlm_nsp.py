"""Pretrain a small BERT from raw text (masked LM + next sentence) and plot it.

    python examples/pretrain_mlm_nsp.py ../shared/data/corpus/gutenberg \
        --config mini --steps 2000 --output runs/pretrain_gutenberg

Smoke run (tiny model, the first 2,000 lines of each file, 20 steps):

    python examples/pretrain_mlm_nsp.py ../shared/data/corpus/gutenberg \
        --config tiny --steps 20 --max-lines 2000 --vocab-size 1000 \
        --batch-size 8 --sequence-length 64 --output runs/pretrain_smoke

Data: any UTF-8 text; `DATA` is a file or a folder of `.txt` files (e.g.
Project Gutenberg books, https://www.gutenberg.org, or WikiText). Documents
are split into sentences, a WordPiece vocabulary is learned from the
training text, sentence pairs are built for NSP (half of the B segments
random) and 30% of the tokens masked (80/10/10; the `budget` recipe of
`keras-bert pretrain`, dropout off). `OUTPUT` gets the
vocabulary, checkpoints, `metrics.csv`/`metrics.jsonl`, TensorBoard logs,
`loss_curves.png` (MLM and NSP loss and accuracy against the step,
drawn from `metrics.jsonl` by `keras_bert.training.plot_loss_curves`),
`evaluation.json` (held-out accuracy next to the unigram/chance baselines)
and the final `model/` preset (`BertPretrainer.from_preset`). This is
the job `keras-bert pretrain` runs, as a script with defaults of its own
(mini, 128 tokens, both objectives, peak rate 1e-3, 2% held out); see
docs/pretraining.md.
"""

import argparse
import glob
import itertools
import json
import os

from keras_bert.training.pretraining.pretraining_job import PretrainingJob


def corpus_files(data, max_lines, output):
    """The text files under `data`; with `max_lines`, slices of them."""
    files = sorted(glob.glob(os.path.join(data, "*.txt"))) if os.path.isdir(
        data) else [data]
    if not files:
        raise SystemExit(f"No .txt files in {data}.")
    if max_lines is None:
        return files
    slice_dir = os.path.join(output, "corpus_slice")
    os.makedirs(slice_dir, exist_ok=True)
    sliced = []
    for path in files:
        target = os.path.join(slice_dir, os.path.basename(path))
        with open(path, encoding="utf-8") as source, open(
                target, "w", encoding="utf-8") as copy:
            copy.writelines(itertools.islice(source, max_lines))
        sliced.append(target)
    return sliced


def check_heldout(corpus):
    """Fails before training when evaluation would have too little text.

    Held-out text is cut in pieces of sentences, and a piece of a document
    stays with that document; next-sentence evaluation draws its random B
    segments from another held-out document, so it needs two.
    """
    documents = sum(1 for document in corpus.documents("heldout") if document)
    if documents < 2:
        raise SystemExit(
            f"The held-out split has {documents} document(s); evaluating "
            "next-sentence prediction needs at least 2. Use more text "
            "(a larger --max-lines, more files) or a larger "
            "--heldout-fraction.")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data", help="a text file or a folder of .txt files")
    parser.add_argument("--config", default="mini",
                        help="tiny, mini, small, medium, base, large")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--max-lines", type=int, metavar="N",
                        help="use only the first N lines of each file")
    parser.add_argument("--heldout-fraction", type=float, default=0.02,
                        help="share of the text kept for evaluation")
    parser.add_argument("--eval-batches", type=int, default=50,
                        help="evaluate on at most this many held-out batches")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", default="runs/pretrain")
    args = parser.parse_args()

    os.makedirs(args.output, exist_ok=True)
    job = PretrainingJob(
        output_dir=args.output,
        corpus_files=corpus_files(args.data, args.max_lines, args.output),
        vocabulary_size=args.vocab_size, config=args.config,
        steps=args.steps, batch_size=args.batch_size,
        sequence_length=args.sequence_length,
        learning_rate=args.learning_rate, seed=args.seed,
        heldout_fraction=args.heldout_fraction,
        next_sentence_prediction=True,
    )
    job.prepare()
    check_heldout(job.corpus)
    job.train()
    results = job.evaluate(max_batches=args.eval_batches)
    job.save()  # the model preset and loss_curves.png (from metrics.jsonl)
    plot = os.path.join(args.output, "loss_curves.png")
    summary = {key: value for key, value in results.items()
               if isinstance(value, (int, float, str))}
    print(json.dumps(summary, indent=2))
    print(f"curves: {plot}; model: {os.path.join(args.output, 'model')}")


if __name__ == "__main__":
    main()
