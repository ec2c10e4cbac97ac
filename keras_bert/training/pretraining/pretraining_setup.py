"""Setting up a pretraining run from its `PretrainingSettings`: the run
file, the corpus, the shards, the vocabulary and the compiled model.

Helpers of `PretrainingJob` (its `prepare` stage); the job itself holds the
stages and the distribution setting, `pretraining_report` the evaluation
and the final files.
"""

import json
import math
import os
import random

import keras

from keras_bert.configs import BACKBONE_CONFIGS
from keras_bert.configs import get_backbone_config
from keras_bert.models.bert_backbone import BertBackbone
from keras_bert.models.bert_pretrainer import BertPretrainer
from keras_bert.optimizers.bert_optimizer import create_optimizer
from keras_bert.optimizers.bert_optimizer import resize_schedule
from keras_bert.preprocessing import BertTokenizer
from keras_bert.preprocessing import train_vocabulary
from keras_bert.training.pretraining.pair_shards import MANIFEST
from keras_bert.training.pretraining.pair_shards import read_pair_shards
from keras_bert.training.pretraining.pair_shards import shard_manifest
from keras_bert.training.pretraining.pair_shards import write_corpus_shards
from keras_bert.training.pretraining.pretraining_data import pair_dataset
from keras_bert.training.pretraining.python_docs_corpus import (
    python_docs_documents,
)
from keras_bert.training.pretraining.python_docs_corpus import (
    write_sentences_file,
)

DEFAULT_VOCABULARY_SIZE = 8000

# Settings a resumed run must share with the run that wrote the checkpoint.
# The global batch, not the per-replica one: a run may resume on another
# number of devices as long as each step sees the same examples.
RESUME_KEYS = ("config", "global_batch_size", "sequence_length", "seed",
               "next_sentence_prediction", "corpus_files", "shards",
               "recipe", "learning_rate", "beta_2", "mask_rate",
               "mask_token_rate", "dropout")


def check_run_file(path, settings, resume, output_dir):
    """Checks `run.json` at `path` against this run's `settings`.

    Returns:
        The saved settings (dict) when resuming a run, else None.

    Raises:
        ValueError: the directory holds a run and `resume` is False, or the
            saved run used other `RESUME_KEYS` settings.
    """
    if not os.path.exists(path):
        return None
    if not resume:
        raise ValueError(
            f"{output_dir} already holds a pretraining run. Pass "
            "--resume to continue it, or choose a new --output."
        )
    with open(path) as file:
        saved = json.load(file)
    # Runs written before the distribution setting had one replica.
    saved.setdefault("global_batch_size", saved.get("batch_size"))
    if not settings.get("corpus_files"):
        # The built-in corpus was written into the run directory.
        settings = {**settings, "corpus_files": saved["corpus_files"]}
    # Only keys the saved run recorded: older runs stored fewer.
    changed = {k: (saved[k], v) for k, v in settings.items()
               if k in RESUME_KEYS and k in saved and saved[k] != v}
    if changed:
        details = "; ".join(f"{k}: {a!r} then, {b!r} now"
                            for k, (a, b) in changed.items())
        raise ValueError(
            f"Cannot resume {output_dir} with different settings "
            f"({details}). Use the original command, or a new --output."
        )
    return saved


def default_corpus_paths(output_dir, num_shards=8):
    """Where the built-in corpus goes in a run directory."""
    return [os.path.join(output_dir, "corpus",
                         f"python_docs-{i:05d}-of-{num_shards:05d}.txt")
            for i in range(num_shards)]


def write_default_corpus(output_dir):
    """Writes the Python-documentation corpus once; returns its files."""
    paths = default_corpus_paths(output_dir)
    if not all(os.path.exists(p) for p in paths):
        documents = python_docs_documents()
        # Shuffled into shards, so per-pass file shuffling mixes them.
        random.Random(0).shuffle(documents)
        for i, path in enumerate(paths):
            write_sentences_file(documents[i::len(paths)], path)
    return paths


def plan_shards(settings, chief, output_dir, print_fn):
    """Decides how this run uses pair shards; the one place that does.

    Returns:
        `(settings, shard_dir, write)`: the settings, updated from the
        shards' metadata when they are read (their corpus unless one is
        given, held-out split and casing, so the evaluation reads text the
        shards left out; their vocabulary); the directory to train from
        (None: stream from the corpus); and whether it must be written
        first (`--write-shards` not complete yet). A process other than
        the chief writes its own copy in its scratch `output_dir` (the
        same pairs: they are seeded) rather than wait for the chief's.
    """
    shards = settings.shards
    if not shards:
        return settings, None, False
    shards = os.path.abspath(shards)
    if settings.write_shards and not os.path.isfile(
            os.path.join(shards, MANIFEST)):
        if not chief:
            shards = os.path.join(output_dir, "shards")
        return settings.replace(shards=shards), shards, True
    manifest = shard_manifest(shards)
    metadata = manifest["metadata"]
    written_from = metadata.get("corpus_files")
    if settings.write_shards:
        print_fn(f"Reusing the complete shards in {shards}.")
        if (settings.corpus_files and written_from
                and [os.path.abspath(p) for p in settings.corpus_files]
                != written_from):
            raise ValueError(
                f"{shards} holds shards of another corpus "
                f"({len(written_from)} files from {written_from[0]}). "
                "Choose a new --write-shards directory."
            )
    changes = {"shards": shards,
               "heldout_fraction": metadata["heldout_fraction"],
               "lowercase": metadata["lowercase"],
               "vocabulary": settings.vocabulary
               or os.path.join(shards, "vocab.txt")}
    if not settings.corpus_files and not metadata.get("builtin_corpus"):
        changes.update(corpus_files=written_from,
                       corpus_format=metadata["corpus_format"])
    return settings.replace(**changes), shards, False


def uses_builtin_corpus(settings, output_dir):
    """True when the run trains on the built-in Python-docs corpus."""
    return not settings.corpus_files or (
        settings.corpus_files == default_corpus_paths(output_dir))


def training_pairs(settings, corpus, tokenizer, shard_dir=None):
    """The training pairs: streamed from `corpus`, or read from shards."""
    if not shard_dir:
        return pair_dataset(corpus, tokenizer, settings.sequence_length,
                            "train", settings.next_sentence_prediction,
                            seed=settings.seed)
    # Checks the shards' length, NSP setting and vocabulary now, before
    # the model is built.
    return read_pair_shards(
        shard_dir, repeat=True, shuffle_seed=settings.seed,
        sequence_length=settings.sequence_length,
        next_sentence_prediction=settings.next_sentence_prediction,
        tokenizer=tokenizer,
    )


def write_training_shards(settings, corpus, tokenizer, shard_dir, builtin,
                          print_fn):
    """Writes the training pairs to TFRecord shards in `shard_dir`."""
    passes = settings.shard_passes
    print_fn(f"Writing the training pairs ({passes} pass(es) over the "
             f"corpus) to {shard_dir}...")
    manifest = write_corpus_shards(
        corpus, tokenizer, shard_dir, settings.sequence_length,
        settings.next_sentence_prediction, passes, settings.seed,
        metadata={
            "corpus_files": [os.path.abspath(p)
                             for p in settings.corpus_files],
            "builtin_corpus": builtin,
            "corpus_format": settings.corpus_format,
            "heldout_fraction": settings.heldout_fraction,
            "lowercase": settings.lowercase,
        },
    )
    print_fn(f"Wrote {manifest['num_pairs']:,} pairs in "
             f"{len(manifest['shards'])} shard(s).")
    return manifest


def load_vocabulary(settings, corpus, output_dir, print_fn):
    """The run's `BertTokenizer`: from `settings.vocabulary`, or learned
    from the training split of `corpus` (`settings.vocabulary_size`
    tokens, 8,000 by default).

    A learned vocabulary is written to `output_dir/vocab.txt` (and reused
    from there); a given one is copied into `output_dir`.
    """
    vocabulary = settings.vocabulary
    vocabulary_size = settings.vocabulary_size
    lowercase = settings.lowercase
    own = os.path.join(output_dir, "vocab.txt")
    path = vocabulary or own
    if vocabulary and not os.path.isfile(path):
        raise FileNotFoundError(f"Vocabulary file not found: {path}")
    if not os.path.exists(path):
        size = vocabulary_size or DEFAULT_VOCABULARY_SIZE
        print_fn(f"Learning a {size}-token WordPiece vocabulary "
                 "from the training text...")
        sentences = (s for d in corpus.documents("train") for s in d)
        train_vocabulary(sentences, size, lowercase=lowercase,
                         output_path=path)
    tokenizer = BertTokenizer(path, lowercase=lowercase)
    size = tokenizer.vocabulary_size()
    if vocabulary and vocabulary_size not in (None, size):
        raise ValueError(
            f"--vocab-size is {vocabulary_size} but the vocabulary "
            f"{path} has {size} tokens. Drop --vocab-size (the model "
            "takes the vocabulary's size) or pass the matching file."
        )
    if os.path.abspath(path) != os.path.abspath(own):
        tokenizer.save_to_preset(output_dir)
    return tokenizer


def step_plan(settings, steps):
    """`(steps, log_every, checkpoint_every)`: `steps` rounded up to whole
    logged intervals (about 20 a run), checkpoints every 5 intervals
    unless the settings say otherwise."""
    log_every = settings.log_every or max(1, min(100, steps // 20))
    steps = log_every * math.ceil(steps / log_every)
    every = settings.checkpoint_every or 5 * log_every
    return steps, log_every, log_every * max(1, round(every / log_every))


def names_an_architecture(config):
    """Whether a run's `config` builds a new model (a size name or
    `BertBackbone` arguments) rather than continuing from a preset
    directory's weights."""
    return isinstance(config, dict) or config in BACKBONE_CONFIGS


def build_pretrainer(settings, vocabulary_size, steps):
    """A compiled `BertPretrainer` for a run; build it in the engine's scope.

    The backbone is `settings.config` (a size name, `BertBackbone`
    arguments, or a preset directory to continue from) with the
    vocabulary's size, room for `settings.sequence_length` positions and
    the recipe's dropout and, for a new model, initial scale
    (`initializer_range`); the schedule spans `steps` global steps.
    """
    config = settings.config
    keras.utils.set_random_seed(settings.seed)
    if names_an_architecture(config):
        arguments = (dict(config) if isinstance(config, dict)
                     else get_backbone_config(config))
        arguments["vocabulary_size"] = vocabulary_size
        arguments["max_sequence_length"] = max(
            arguments.get("max_sequence_length", 512),
            settings.sequence_length)
        if settings.dropout is not None:
            arguments.update(dropout=settings.dropout,
                             attention_dropout=None)
        if settings.initializer_range is not None:
            arguments["initializer_range"] = settings.initializer_range
        model = BertPretrainer(
            BertBackbone(**arguments),
            next_sentence_prediction=settings.next_sentence_prediction,
        )
    else:
        overrides = ({} if settings.dropout is None
                     else {"dropout": settings.dropout})
        model = BertPretrainer.from_preset(config, preprocessor=None,
                                           **overrides)
        if model.backbone.vocabulary_size != vocabulary_size:
            raise ValueError(
                f"The model in {config} has a vocabulary of "
                f"{model.backbone.vocabulary_size} tokens but the "
                f"vocabulary {settings.vocabulary or 'learned'} has "
                f"{vocabulary_size}. Pass the model's own vocab.txt with "
                "--vocab."
            )
    compile_pretrainer(model, settings, steps)
    return model


def compile_pretrainer(model, settings, steps):
    """Compiles `model` with a fresh optimizer whose schedule spans `steps`
    (`resize_pretrainer_schedule` can change it)."""
    model.compile(
        optimizer=create_optimizer(
            total_steps=steps, learning_rate=settings.learning_rate,
            warmup_steps=_warmup_steps(settings, steps),
            optimizer=settings.optimizer, beta_2=settings.beta_2,
            resizable_schedule=True,
            exclude_from_weight_decay=model.unread_weights(),
        ),
        jit_compile=settings.jit_compile,
    )


def resize_pretrainer_schedule(model, settings, steps):
    """Makes the schedule of a model `compile_pretrainer` compiled span
    `steps`, without compiling again (an XLA compile is a large part of
    a run of a few minutes)."""
    resize_schedule(model.optimizer, steps, _warmup_steps(settings, steps))


def _warmup_steps(settings, steps):
    if settings.warmup_steps is not None:
        return settings.warmup_steps
    return max(1, round(settings.warmup_fraction * steps))
