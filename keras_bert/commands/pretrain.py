"""`keras-bert pretrain`: BERT pretraining (MLM + NSP) from raw text.

With no `--corpus` this is the package's demo: it builds a corpus from the
Python documentation shipped with the interpreter, learns a vocabulary,
pretrains a tiny BERT for a few minutes on a CPU and reports held-out
accuracy next to baselines.
"""

import argparse
import json
import time

from keras_bert.commands.distribution_arguments import (
    add_distribution_arguments)
from keras_bert.commands.distribution_arguments import (
    distribution_from_args)
from keras_bert.commands.input_files import require_files

# Fields of `PretrainingSettings` whose flags default to None here, so that
# the recipe (or the job) decides unless the user says otherwise.
_SETTING_FLAGS = ("corpus_format", "vocabulary", "vocabulary_size", "config",
                  "recipe", "steps", "minutes", "batch_size",
                  "sequence_length", "learning_rate", "beta_2",
                  "warmup_fraction",
                  "warmup_steps", "dropout", "initializer_range",
                  "mask_rate", "mask_token_rate",
                  "optimizer",
                  "next_sentence_prediction", "whole_word_masking",
                  "heldout_fraction", "log_every", "checkpoint_every", "seed",
                  "shard_passes", "resume")


def add_parser(subparsers):
    parser = subparsers.add_parser(
        "pretrain",
        help="pretrain BERT (masked LM, next-sentence prediction optional) "
        "from raw text",
        description="Pretrain BERT from raw text files (default: the Python "
        "docs shipped with the interpreter) for a time budget or a number "
        "of steps. Writes checkpoints, metrics (CSV, JSON lines, "
        "TensorBoard), a loss plot and a preset to --output.",
    )
    data = parser.add_argument_group("data")
    data.add_argument("--corpus", nargs="+", metavar="FILE",
                      help="UTF-8 text files (default: built-in Python docs)")
    data.add_argument("--corpus-format", choices=("auto", "sentences",
                                                  "paragraphs"),
                      help="'sentences': one per line, blank line between "
                      "documents (original BERT); 'paragraphs': prose, cut "
                      "into documents of whole paragraphs of about 50 "
                      "sentences (default: detect per file)")
    data.add_argument("--vocab", dest="vocabulary", metavar="VOCAB",
                      help="an existing vocab.txt")
    data.add_argument("--vocab-size", dest="vocabulary_size", type=int,
                      metavar="N",
                      help="size of the vocabulary to learn (default 8000)")
    data.add_argument("--cased", action="store_true",
                      help="keep case and accents (default: uncased)")
    data.add_argument("--heldout-fraction", type=float,
                      help="share of the text held out (default 0.05)")
    shards = data.add_mutually_exclusive_group()
    shards.add_argument("--write-shards", metavar="DIR",
                        help="offline mode: write the training pairs to "
                        "TFRecord shards in DIR once, then train from them "
                        "(a complete DIR is reused)")
    shards.add_argument("--shards", metavar="DIR",
                        help="train from shards written by --write-shards "
                        "(their corpus and vocabulary are the defaults)")
    data.add_argument("--shard-passes", type=int, metavar="N",
                      help="with --write-shards: passes over the corpus, "
                      "each with new pairs (default 1)")
    recipe = parser.add_argument_group(
        "recipe", "Unset values come from --recipe (see docs/pretraining.md)")
    recipe.add_argument("--recipe", choices=("budget", "bert"),
                        help="'budget' (default): chosen by measurement "
                        "for runs of minutes; 'bert': the paper's")
    recipe.add_argument("--config",
                        help="tiny, mini, small, medium, base, large, a "
                        "JSON object of BertBackbone arguments (e.g. "
                        "'{\"num_layers\": 4, ...}'), or a preset directory "
                        "to continue from (default: tiny)")
    recipe.add_argument("--minutes", type=float,
                        help="wall-clock budget of the whole run, set-up "
                        "and evaluation included (default 4.5); the steps "
                        "follow from the measured step rate")
    recipe.add_argument("--steps", type=int,
                        help="train this many steps instead of a budget")
    recipe.add_argument("--batch-size", type=int,
                        help="sequences per replica and step; a step sees "
                        "this x replicas")
    recipe.add_argument("--sequence-length", type=int)
    recipe.add_argument("--learning-rate", type=float, help="peak rate")
    recipe.add_argument("--beta-2", type=float,
                        help="the optimizer's squared-gradient decay")
    recipe.add_argument("--warmup-fraction", type=float,
                        help="share of the steps warming up")
    recipe.add_argument("--warmup-steps", type=int,
                        help="warmup length (overrides the fraction)")
    recipe.add_argument("--dropout", type=float)
    recipe.add_argument("--initializer-range", type=float,
                        help="stddev of a new model's initial weights "
                        "(BERT: 0.02; 'budget': 0.05)")
    recipe.add_argument("--mask-rate", type=float,
                        help="share of the tokens to predict")
    recipe.add_argument("--mask-token-rate", type=float,
                        help="share of the predicted tokens shown as "
                        "[MASK], the rest split evenly between a random "
                        "token and the token itself (BERT: 0.8)")
    recipe.add_argument("--optimizer", choices=("adamw", "lamb"))
    recipe.add_argument("--nsp", action=argparse.BooleanOptionalAction,
                        dest="next_sentence_prediction",
                        help="next-sentence prediction next to masked LM "
                        "(--no-nsp: masked LM only, on single contiguous "
                        "segments); off in 'budget', on in 'bert'")
    recipe.add_argument("--whole-word-masking", action="store_true",
                        default=None)
    run_group = parser.add_argument_group("run")
    run_group.add_argument("--log-every", type=int, metavar="STEPS")
    run_group.add_argument("--checkpoint-every", type=int, metavar="STEPS")
    run_group.add_argument("--seed", type=int)
    run_group.add_argument("--output", default="runs/pretrain", metavar="DIR")
    run_group.add_argument("--resume", action="store_true", default=None,
                           help="continue the run in --output from its "
                           "newest checkpoint")
    add_distribution_arguments(parser)
    parser.set_defaults(func=run)


def settings_from_args(args):
    """The `PretrainingSettings` the command line asks for."""
    from keras_bert.training.pretraining.pretraining_settings import (
        PretrainingSettings,
    )

    given = {name: getattr(args, name) for name in _SETTING_FLAGS
             if getattr(args, name) is not None}
    if str(given.get("config", "")).lstrip().startswith("{"):
        try:
            given["config"] = json.loads(given["config"])
        except json.JSONDecodeError as error:
            raise ValueError(
                f"--config is not valid JSON: {error}") from None
    if args.steps is not None and args.minutes is None:
        given["minutes"] = None
    return PretrainingSettings(
        corpus_files=args.corpus or [],
        lowercase=not args.cased,
        shards=args.write_shards or args.shards,
        write_shards=bool(args.write_shards),
        **given,
    )


def run(args):
    started = time.perf_counter()
    # Named files are checked before a framework loads.
    require_files((args.corpus or [])
                  + ([args.vocabulary] if args.vocabulary else []))
    import keras

    from keras_bert.training.pretraining.pretraining_job import PretrainingJob
    from keras_bert.training.pretraining.pretraining_logger import (
        format_duration,
    )
    from keras_bert.training.pretraining.pretraining_setup import (
        names_an_architecture,
    )

    # Bad input (missing or empty files, non-UTF-8 text, a size mismatch,
    # a run directory in use, a budget spent before training) raises a
    # ValueError or OSError naming it: one line, from `run_command`.
    # First: multi-host JAX must join its cluster before computing.
    engine = distribution_from_args(args)
    job = PretrainingJob(args.output, settings_from_args(args),
                         engine=engine, started=started)
    s = job.settings
    print(f"keras-bert pretrain on {keras.config.backend()} -> {args.output}")
    job.prepare()
    backbone = job.model.backbone
    print(f"model: BERT {s.config} ({backbone.num_layers} layers, hidden "
          f"{backbone.hidden_dim}), vocabulary {backbone.vocabulary_size:,}, "
          f"{job.model.count_params():,} parameters")
    replicas = (f" ({s.batch_size} per replica x {job.replicas} "
                f"replicas, {args.distribution})" if engine else "")
    length = (f"{job.steps:,} steps" if job.steps
              else f"{s.minutes:g} minutes")
    # The initial scale only says something of a model built afresh.
    init = (f", init stddev {backbone.initializer_range:g}"
            if names_an_architecture(s.config) and not s.resume else "")
    print(f"training ({s.recipe} recipe): {length} x "
          f"{job.global_batch_size} sequences{replicas} x "
          f"{s.sequence_length} tokens, peak lr {s.learning_rate:g}{init}, "
          f"dropout {s.dropout:g}, {s.mask_rate:.0%} masked "
          f"({_mask_split(s.mask_token_rate)}), "
          f"{s.optimizer}{'' if s.next_sentence_prediction else ', no NSP'}")
    job.train()
    results = job.evaluate()
    job.save()
    if not job.chief:
        print(f"done; the chief process writes {args.output}")
        return 0
    print()
    print(format_results(results))
    if results.get("budget_shortfall"):
        print(format_shortfall(results["budget_shortfall"]))
    print()
    print(format_fill_mask(results["fill_mask_examples"],
                           results.get("fill_mask_summary")))
    print()
    out = job.output_dir
    print(f"model preset: {out}/model  (BertPretrainer.from_preset, or "
          f"`keras-bert fill-mask {out}/model \"text with [MASK]\"`)")
    print(f"logs: {out}/metrics.csv, {out}/metrics.jsonl, TensorBoard "
          f"{out}/tensorboard" + (f", plot {out}/loss_curves.png"
                                  if getattr(job, "plot_written", False) else ""))
    timings = ", ".join(f"{k[:-2]} {format_duration(v)}"
                        for k, v in job.timings.items())
    print(f"total time {format_duration(time.perf_counter() - started)} "
          f"({timings})")
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


def format_shortfall(shortfall):
    """Why a budget run trained fewer steps than it planned."""
    planned, trained = shortfall["planned_steps"], shortfall["trained_steps"]
    return (f"  The machine was busy: the run planned {planned:,} steps at "
            f"{shortfall['planned_steps_per_second']:.2f} steps/s and trained"
            f" {trained:,} ({trained / planned:.0%}) at "
            f"{shortfall['trained_steps_per_second']:.2f} steps/s; an idle "
            "machine trains more in the same minutes and scores higher.")


def _mask_split(mask_token_rate):
    """The split as printed, e.g. 80/10/10: [MASK], random, unchanged."""
    other = (1 - mask_token_rate) / 2
    return f"{mask_token_rate:.0%}/{other:.0%}/{other:.0%}".replace("%", "")


def format_fill_mask(examples, summary=None):
    lines = ["Fill-mask on held-out sentences (+: the answer is in the top "
             "five):"]
    if not examples:
        lines.append("  (none: no held-out sentence of 8-25 words has a "
                     "whole word the vocabulary knows)")
    for example in examples:
        guesses = ", ".join(f"{token} {p:.2f}"
                            for token, p in example["predictions"])
        rank = example.get("rank")
        mark = "+" if rank else " "
        place = f" (#{rank})" if rank else ""
        lines.append(f"  {example['text']}")
        lines.append(f"   {mark} answer: {example['answer'] + place:<14} "
                     f"model: {guesses}")
        if "frequency_rank" in example:
            lines.append(f"     the model ranks it {example['model_rank']:,}"
                         f"; word frequency alone, "
                         f"{example['frequency_rank']:,}")
    hits = sum(1 for example in examples if example.get("rank"))
    if examples:
        lines.append(f"  {hits} of {len(examples)} answers in the top five")
    ranked = [example for example in examples if "frequency_rank" in example]
    if ranked:
        # Below the top five, this is what shows that context was learned.
        above = sum(1 for example in ranked
                    if example["model_rank"] < example["frequency_rank"])
        lines.append(f"  {above} of {len(ranked)} answers ranked higher by "
                     "the model than by word frequency alone")
    if summary and summary["examples"] > len(examples):
        # Five sentences are a small sample; this is the rate behind them.
        lines.append(
            f"  over {summary['examples']} held-out sentences masked the same"
            f" way: the answer is in the model's top five\n   in "
            f"{summary['model_top5']:.0%} (among the five most frequent "
            f"tokens: {summary['frequency_top5']:.0%}), ranked higher than by"
            f" word frequency in {summary['above_frequency']:.0%}")
    if examples and not hits:
        # A newcomer's first run: say that this is what minutes buy.
        lines.append(
            "  (a few minutes of a tiny model learn which kind of word fits;"
            " naming the word takes\n   longer: on the built-in corpus "
            "--minutes 20 names 2 of 5, "
            "docs/pretraining.md#quality-per-minute)")
    return "\n".join(lines)
