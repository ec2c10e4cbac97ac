"""Setting up a pretraining run: run settings, corpus, shards, vocabulary
and the compiled model.

Helpers of `PretrainingJob` (its `prepare` stage); the job itself holds the
stages and the distribution setting, `pretraining_report` the evaluation
and the final files.
"""

import json
import os
import random

import keras

from keras_bert.training.pair_shards import MANIFEST
from keras_bert.training.pair_shards import read_pair_shards
from keras_bert.training.pair_shards import shard_manifest
from keras_bert.training.pair_shards import write_corpus_shards
from keras_bert.training.pretraining_data import pair_dataset
from keras_bert.training.python_docs_corpus import python_docs_documents
from keras_bert.training.python_docs_corpus import write_sentences_file

DEFAULT_VOCABULARY_SIZE = 8000

# Settings a resumed run must share with the run that wrote the checkpoint.
# The global batch, not the per-replica one: a run may resume on another
# number of devices as long as each step sees the same examples.
RESUME_KEYS = ("config", "global_batch_size", "sequence_length", "seed",
               "next_sentence_prediction", "corpus_files", "shards")


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
    changed = {k: (saved.get(k), v) for k, v in settings.items()
               if k in RESUME_KEYS and saved.get(k) != v}
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


def shards_to_read(shards, write_shards, corpus_files, print_fn):
    """The manifest of `shards` when they should be read (not written).

    Returns None when there are no shards, or when `write_shards` asks for
    them and they are not complete yet.
    """
    if not shards:
        return None
    if write_shards and not os.path.isfile(os.path.join(shards, MANIFEST)):
        return None
    manifest = shard_manifest(shards)
    if write_shards:
        print_fn(f"Reusing the complete shards in {shards}.")
    written_from = manifest["metadata"].get("corpus_files")
    if (write_shards and corpus_files and written_from
            and [os.path.abspath(p) for p in corpus_files] != written_from):
        raise ValueError(
            f"{shards} holds shards of another corpus "
            f"({len(written_from)} files from {written_from[0]}). "
            "Choose a new --write-shards directory."
        )
    return manifest


def settings_from_shards(metadata, corpus_files):
    """The job settings that shards' `metadata` fixes.

    Their corpus (unless `corpus_files` are given), held-out split and
    casing: the held-out evaluation then reads text the shards left out.
    """
    settings = {"heldout_fraction": metadata["heldout_fraction"],
                "lowercase": metadata["lowercase"]}
    if not corpus_files and not metadata.get("builtin_corpus"):
        settings.update(corpus_files=metadata["corpus_files"],
                        corpus_format=metadata["corpus_format"])
    return settings


def training_pairs(corpus, tokenizer, sequence_length,
                   next_sentence_prediction, seed, shards=None):
    """The training pairs: streamed from `corpus`, or read from `shards`."""
    if not shards:
        return pair_dataset(corpus, tokenizer, sequence_length, "train",
                            next_sentence_prediction, seed=seed)
    # Checks the shards' length, NSP setting and vocabulary now, before
    # the model is built.
    return read_pair_shards(
        shards, repeat=True, shuffle_seed=seed,
        sequence_length=sequence_length,
        next_sentence_prediction=next_sentence_prediction,
        tokenizer=tokenizer,
    )


def write_training_shards(corpus, tokenizer, shards, sequence_length,
                          next_sentence_prediction, passes, seed, metadata,
                          print_fn):
    """Writes the training pairs to TFRecord shards in `shards`."""
    print_fn(f"Writing the training pairs ({passes} pass(es) over the "
             f"corpus) to {shards}...")
    manifest = write_corpus_shards(
        corpus, tokenizer, shards, sequence_length, next_sentence_prediction,
        passes, seed, metadata=metadata,
    )
    print_fn(f"Wrote {manifest['num_pairs']:,} pairs in "
             f"{len(manifest['shards'])} shard(s).")
    return manifest


def load_vocabulary(vocabulary, vocabulary_size, lowercase, corpus,
                    output_dir, print_fn):
    """The run's `BertTokenizer`: from `vocabulary`, or learned from text.

    A learned vocabulary is written to `output_dir/vocab.txt` (and reused
    from there); a given one is copied into `output_dir`.

    Args:
        vocabulary: str or None. A vocab.txt.
        vocabulary_size: int or None. Size to learn (None: 8,000); with
            `vocabulary`, must match its size.
        lowercase: bool.
        corpus: the run's `TextCorpus` (its training split is learned from).
        output_dir: str.
        print_fn: callable for progress lines.
    """
    from keras_bert.preprocessing import BertTokenizer
    from keras_bert.preprocessing import train_vocabulary

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


def build_pretrainer(config, vocabulary_size, sequence_length,
                     next_sentence_prediction, steps, learning_rate,
                     warmup_steps, optimizer, seed, jit_compile="auto",
                     vocabulary=None):
    """A compiled `BertPretrainer` for a run; build it in the engine's scope.

    Args:
        config: str or dict. A size name, `BertBackbone` arguments (the
            vocabulary size is filled in) or a preset directory.
        vocabulary_size: int. The tokenizer's size.
        sequence_length: int. Raises a smaller `max_sequence_length`.
        next_sentence_prediction: bool.
        steps, learning_rate, warmup_steps, optimizer: the optimizer and
            its schedule, in global steps (one per global batch).
        seed: int. Seeds the initialization.
        jit_compile: bool or "auto".
        vocabulary: str or None. The vocab.txt given, for error messages.
    """
    from keras_bert.configs import BACKBONE_CONFIGS
    from keras_bert.configs import get_backbone_config
    from keras_bert.models.bert_backbone import BertBackbone
    from keras_bert.models.bert_pretrainer import BertPretrainer
    from keras_bert.training.optimizers import create_optimizer

    keras.utils.set_random_seed(seed)
    if isinstance(config, dict) or config in BACKBONE_CONFIGS:
        arguments = (dict(config) if isinstance(config, dict)
                     else get_backbone_config(config))
        arguments["vocabulary_size"] = vocabulary_size
        arguments["max_sequence_length"] = max(
            arguments.get("max_sequence_length", 512), sequence_length)
        model = BertPretrainer(
            BertBackbone(**arguments),
            next_sentence_prediction=next_sentence_prediction,
        )
    else:
        model = BertPretrainer.from_preset(config)
        if model.backbone.vocabulary_size != vocabulary_size:
            raise ValueError(
                f"The model in {config} has a vocabulary of "
                f"{model.backbone.vocabulary_size} tokens but the "
                f"vocabulary {vocabulary or 'learned'} has "
                f"{vocabulary_size}. Pass the model's own vocab.txt with "
                "--vocab."
            )
    model.compile(
        optimizer=create_optimizer(
            total_steps=steps, learning_rate=learning_rate,
            warmup_steps=warmup_steps, optimizer=optimizer,
        ),
        jit_compile=jit_compile,
    )
    return model
