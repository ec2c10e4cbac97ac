"""`keras-bert pretrain`: BERT pretraining (MLM + NSP) from raw text.

With no `--corpus` this is the package's demo: it builds a corpus from the
Python documentation shipped with the interpreter, learns a vocabulary,
pretrains a tiny BERT for a few minutes on a CPU and reports held-out
accuracy next to baselines.
"""

import time

from keras_bert.training.distribution_arguments import (
    add_distribution_arguments)

# Sized for a few minutes on 2 CPU cores (measured in docs/pretraining.md).
# Length 64 costs a third of 128 per step and learns about as much per
# step this early in training (BERT also ran 90% of its steps at 128 of
# 512); a peak rate of 3e-3 collapsed the tiny model to the unigram.
DEFAULTS = {"config": "tiny", "steps": 500, "batch_size": 32,
            "sequence_length": 64, "learning_rate": 1e-3}


def add_parser(subparsers):
    parser = subparsers.add_parser(
        "pretrain",
        help="pretrain BERT (masked LM + next sentence) from raw text",
        description="Pretrain BERT from raw text files (default: the Python "
        "docs shipped with the interpreter). Writes checkpoints, metrics "
        "(CSV, JSON lines, TensorBoard), a loss plot and a preset to --output.",
    )
    parser.add_argument("--corpus", nargs="+", metavar="FILE",
                        help="UTF-8 text files (default: built-in Python docs)")
    parser.add_argument("--corpus-format", default="auto",
                        choices=("auto", "sentences", "paragraphs"),
                        help="'sentences': one per line, blank line between "
                        "documents (original BERT); 'paragraphs': prose, cut "
                        "into documents of whole paragraphs of about 50 "
                        "sentences (default: detect per file)")
    parser.add_argument("--vocab", metavar="VOCAB", help="an existing vocab.txt")
    parser.add_argument("--vocab-size", type=int, metavar="N",
                        help="size of the vocabulary to learn (default 8000)")
    parser.add_argument("--cased", action="store_true",
                        help="keep case and accents (default: uncased)")
    parser.add_argument("--config", default=DEFAULTS["config"],
                        help="tiny, mini, small, medium, base, large, or a "
                        "preset directory to continue from (default: tiny)")
    parser.add_argument("--steps", type=int, default=DEFAULTS["steps"])
    parser.add_argument("--batch-size", type=int,
                        default=DEFAULTS["batch_size"],
                        help="sequences per replica and step (default 32); "
                        "a step sees this x replicas")
    parser.add_argument("--sequence-length", type=int,
                        default=DEFAULTS["sequence_length"])
    parser.add_argument("--learning-rate", type=float,
                        default=DEFAULTS["learning_rate"],
                        help="peak rate (default 1e-3, for short small runs; "
                        "the paper uses 1e-4 for 1M steps)")
    parser.add_argument("--warmup-steps", type=int,
                        help="default: 1%% of --steps (the paper's ratio)")
    parser.add_argument("--optimizer", default="adamw",
                        choices=("adamw", "lamb"))
    parser.add_argument("--no-nsp", action="store_true",
                        help="masked LM only, on single contiguous segments")
    parser.add_argument("--whole-word-masking", action="store_true")
    parser.add_argument("--heldout-fraction", type=float, default=0.02)
    parser.add_argument("--log-every", type=int, metavar="STEPS")
    parser.add_argument("--checkpoint-every", type=int, metavar="STEPS")
    parser.add_argument("--seed", type=int, default=0)
    shards = parser.add_mutually_exclusive_group()
    shards.add_argument("--write-shards", metavar="DIR",
                        help="offline mode: write the training pairs to "
                        "TFRecord shards in DIR once, then train from them "
                        "(a complete DIR is reused)")
    shards.add_argument("--shards", metavar="DIR",
                        help="train from shards written by --write-shards "
                        "(their corpus and vocabulary are the defaults)")
    parser.add_argument("--shard-passes", type=int, default=1, metavar="N",
                        help="with --write-shards: passes over the corpus, "
                        "each with new pairs (default 1)")
    parser.add_argument("--output", default="runs/pretrain", metavar="DIR")
    parser.add_argument("--resume", action="store_true",
                        help="continue the run in --output from its newest "
                        "checkpoint")
    add_distribution_arguments(parser)
    parser.set_defaults(func=run)


def run(args):
    import keras

    from keras_bert.training import distribution
    from keras_bert.training.pretraining_job import PretrainingJob
    from keras_bert.training.pretraining_logger import format_duration

    started = time.perf_counter()
    try:
        # First: multi-host JAX must join its cluster before computing.
        engine = distribution.distribution_from_args(args)
    except ValueError as error:
        raise SystemExit(f"error: {error}") from None
    job = PretrainingJob(
        output_dir=args.output, corpus_files=args.corpus,
        corpus_format=args.corpus_format, vocabulary=args.vocab,
        vocabulary_size=args.vocab_size, lowercase=not args.cased,
        config=args.config, steps=args.steps, batch_size=args.batch_size,
        sequence_length=args.sequence_length,
        learning_rate=args.learning_rate, warmup_steps=args.warmup_steps,
        optimizer=args.optimizer, next_sentence_prediction=not args.no_nsp,
        whole_word_masking=args.whole_word_masking,
        heldout_fraction=args.heldout_fraction, log_every=args.log_every,
        checkpoint_every=args.checkpoint_every, seed=args.seed,
        shards=args.write_shards or args.shards,
        write_shards=bool(args.write_shards),
        shard_passes=args.shard_passes, resume=args.resume,
        distribution=engine,
    )
    print(f"keras-bert pretrain on {keras.config.backend()} -> {args.output}")
    try:
        job.prepare()
    except (OSError, ValueError) as error:
        # Bad input (missing or empty files, non-UTF-8 text, a size
        # mismatch, a run directory in use): the message names it.
        raise SystemExit(f"error: {error}") from None
    backbone = job.model.backbone
    print(f"model: BERT {job.config} ({backbone.num_layers} layers, hidden "
          f"{backbone.hidden_dim}), vocabulary {backbone.vocabulary_size:,}, "
          f"{job.model.count_params():,} parameters")
    replicas = (f" ({job.batch_size} per replica x {job.replicas} "
                f"replicas, {args.distribution})" if engine else "")
    print(f"training: {job.steps} steps x {job.global_batch_size} sequences"
          f"{replicas} x {job.sequence_length} tokens, peak lr "
          f"{job.learning_rate:g}, {job.optimizer}")
    job.train()
    results = job.evaluate()
    job.save()
    if not job.chief:
        print(f"done; the chief process writes {args.output}")
        return 0
    print()
    print(format_results(results))
    print()
    print(format_fill_mask(results["fill_mask_examples"]))
    print()
    out = job.output_dir
    print(f"model preset: {out}/model  (BertPretrainer.from_preset, or "
          f"`keras-bert fill-mask {out}/model \"text with [MASK]\"`)")
    print(f"logs: {out}/metrics.csv, {out}/metrics.jsonl, TensorBoard "
          f"{out}/tensorboard" + (f", plot {out}/loss_curves.png"
                                  if getattr(job, "plot_written", False) else ""))
    timings = ", ".join(f"{k[:-2]} {format_duration(v)}" for k, v in job.timings.items())
    print(f"total time {format_duration(time.perf_counter() - started)} ({timings})")
    return 0


def format_results(results):
    """The held-out evaluation as a small table."""
    masked = results["masked_tokens"]
    lines = [
        f"Held-out evaluation ({masked:,} masked tokens"
        + (f", {results['nsp_examples']:,} sentence pairs)"
           if "nsp_examples" in results else ")"),
        f"  {'':26}{'model':>10}{'baseline':>10}",
        f"  {'masked-token accuracy':26}{results['mlm_accuracy']:>10.1%}"
        f"{results['unigram_accuracy']:>10.1%}   always "
        f"'{results['most_frequent_token']}' (most frequent token)",
        f"  {'masked-token loss (nats)':26}{results['mlm_loss']:>10.3f}"
        f"{results['unigram_loss']:>10.3f}   unigram frequencies",
    ]
    if "nsp_accuracy" in results:
        lines.append(
            f"  {'next-sentence accuracy':26}{results['nsp_accuracy']:>10.1%}"
            f"{0.5:>10.1%}   chance (majority label: "
            f"{results['nsp_majority']:.1%})"
        )
    return "\n".join(lines)


def format_fill_mask(examples):
    lines = ["Fill-mask on held-out sentences:"]
    if not examples:
        lines.append("  (none: no held-out sentence of 8-25 words has a "
                     "whole word the vocabulary knows)")
    for example in examples:
        guesses = ", ".join(f"{token} {p:.2f}"
                            for token, p in example["predictions"])
        mark = "+" if example["correct"] else " "
        lines.append(f"  {example['text']}")
        lines.append(f"   {mark} answer: {example['answer']:<12} model: {guesses}")
    return "\n".join(lines)

