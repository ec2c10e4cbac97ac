import json
import math
import os
import shutil
import tempfile
import time

import keras

from keras_bert.training import distribution
from keras_bert.training import pretraining_report as report
from keras_bert.training import pretraining_setup as setup
from keras_bert.training.pretraining_checkpoint import PretrainingCheckpoint
from keras_bert.training.pretraining_data import batch_pairs
from keras_bert.training.pretraining_logger import PretrainingLogger
from keras_bert.training.pretraining_setup import DEFAULT_VOCABULARY_SIZE  # noqa: F401
from keras_bert.training.text_corpus import TextCorpus


class PretrainingJob:
    """One pretraining run from raw text to a saved model, as the CLI runs it.

    In `output_dir`: `run.json` (the settings), `corpus/` (the built-in
    corpus when no files are given), `vocab.txt`, `checkpoints/`,
    `metrics.csv`, `metrics.jsonl`, `tensorboard/`, `loss_curves.png`,
    `evaluation.json` and the final preset `model/` (loadable with
    `BertPretrainer.from_preset`).

    Training pairs are streamed from the text, or read from TFRecord
    shards (`shards`; see `keras_bert.training.pair_shards`). Shards
    remember their corpus and vocabulary: without `corpus_files` the
    held-out evaluation reads the corpus they were written from.

    With `distribution`, the model is built, compiled and trained inside
    the engine's scope (see `keras_bert.training.distribution`): each step
    takes a global batch of `batch_size` x replicas, `steps` and the
    learning-rate schedule count global steps, and only the chief process
    writes `output_dir` (other processes work in a temporary directory that
    is removed by `save`). Checkpoints and the preset hold whole arrays, so
    they load on one device, or resume on another number of devices with
    the same global batch.

    Args:
        output_dir: str. Run directory.
        corpus_files: list of str or None. Text files; None builds the
            Python-documentation corpus.
        corpus_format: str. "auto", "sentences" or "paragraphs".
        vocabulary: str or None. A vocab.txt; None learns one.
        vocabulary_size: int or None. Size of a learned vocabulary (None:
            8,000); with `vocabulary`, must match its size.
        lowercase: bool. Uncased tokenization.
        config: str or dict. A size name ("tiny", "mini", ...), a preset
            directory to continue pretraining (e.g. phase 2 at length 512),
            or `BertBackbone` arguments (the vocabulary size is filled in).
        steps: int. Training steps (global; rounded up to a multiple of
            `log_every`).
        batch_size: int. Sequences per replica and step.
        sequence_length: int.
        learning_rate: float. Peak learning rate.
        warmup_steps: int or None. None: 1% of the steps (the paper's ratio).
        optimizer: str. "adamw" or "lamb".
        next_sentence_prediction: bool. False trains MLM only.
        whole_word_masking: bool.
        heldout_fraction: float. Share of the text kept for evaluation.
        log_every: int or None. Steps per logged interval (None: ~20 lines).
        checkpoint_every: int or None. Steps between checkpoints (rounded
            to a multiple of `log_every`; None: every 5 intervals).
        seed: int. Seeds the data stream, masks and initialization.
        shards: str or None. A pair-shard directory to train from.
        write_shards: bool. Write `shards` from the corpus first (reused
            when it is already complete, e.g. on resume).
        shard_passes: int. Passes over the corpus to write; pass `p`
            draws its pairs with seed `seed + p`.
        resume: bool. Continue from the newest checkpoint in `output_dir`.
        distribution: None (one device), "data_parallel" or
            "model_parallel" (configured with `mesh_shape` by
            `configure_distribution` in `prepare`), or an engine that
            `configure_distribution` returned (for `multi_host=`/`tpu=`).
        mesh_shape: tuple of ints or None. With a `distribution` name.
        jit_compile: bool or "auto". Passed to `compile`.
        print_fn: callable or None. Receives progress lines (None: silent).

    Example:
    >>> job = PretrainingJob("runs/docs", config="tiny", steps=600)
    >>> # results = job.run()   # prepare, train, evaluate, save
    """

    def __init__(self, output_dir, corpus_files=None, corpus_format="auto",
                 vocabulary=None, vocabulary_size=None, lowercase=True,
                 config="mini", steps=1000, batch_size=32,
                 sequence_length=128, learning_rate=1e-3, warmup_steps=None,
                 optimizer="adamw", next_sentence_prediction=True,
                 whole_word_masking=False, heldout_fraction=0.02,
                 log_every=None, checkpoint_every=None, seed=0,
                 shards=None, write_shards=False, shard_passes=1,
                 resume=False, distribution=None, mesh_shape=None,
                 jit_compile="auto", print_fn=print):
        self.output_dir = self.run_dir = output_dir
        self.corpus_files = list(corpus_files or [])
        self.corpus_format = corpus_format
        self.vocabulary = vocabulary
        self.vocabulary_size = vocabulary_size
        self.lowercase = lowercase
        self.config = config
        self.log_every = log_every or max(1, min(100, steps // 20))
        self.steps = self.log_every * math.ceil(steps / self.log_every)
        self.batch_size = batch_size
        self.sequence_length = sequence_length
        self.learning_rate = learning_rate
        self.warmup_steps = warmup_steps
        self.optimizer = optimizer
        self.next_sentence_prediction = next_sentence_prediction
        self.whole_word_masking = whole_word_masking
        self.heldout_fraction = heldout_fraction
        every = checkpoint_every or 5 * self.log_every
        self.checkpoint_every = self.log_every * max(1, round(every / self.log_every))
        self.seed = seed
        self.shards = os.path.abspath(shards) if shards else None
        self.write_shards = write_shards
        self.shard_passes = shard_passes
        self.resume = resume
        self.distribution = distribution
        self.mesh_shape = mesh_shape
        self.engine = None
        self.replicas = 1
        self.global_batch_size = batch_size
        self.chief = True
        self.jit_compile = jit_compile
        self.print_fn = print_fn or (lambda line: None)
        self.timings = {}

    def path(self, *names):
        return os.path.join(self.output_dir, *names)

    def run(self):
        """Every stage in order; returns the evaluation results."""
        self.prepare()
        self.train()
        results = self.evaluate()
        self.save()
        return results

    # Stages --------------------------------------------------------------

    def prepare(self):
        """Sets up the engine, reads the corpus, gets the vocabulary and
        builds the model."""
        self._configure_distribution()
        start = time.perf_counter()
        os.makedirs(self.output_dir, exist_ok=True)
        saved = setup.check_run_file(self.path("run.json"), self._settings(),
                                      self.resume, self.output_dir)
        if saved and not self.corpus_files:
            self.corpus_files = saved["corpus_files"]
        manifest = setup.shards_to_read(self.shards, self.write_shards,
                                         self.corpus_files, self.print_fn)
        if manifest:
            # The shards' corpus (unless one is given), split and casing.
            vars(self).update(setup.settings_from_shards(
                manifest["metadata"], self.corpus_files))
        builtin = not self.corpus_files or (
            self.corpus_files == setup.default_corpus_paths(self.output_dir))
        if builtin:
            self.corpus_files = setup.write_default_corpus(self.output_dir)
            self.corpus_format = "sentences"
        self.corpus = TextCorpus(self.corpus_files, self.corpus_format,
                                 self.heldout_fraction)
        stats = self.corpus_stats = self.corpus.check(
            require_pairs=self.next_sentence_prediction)
        self.print_fn(
            f"{'built-in Python docs' if builtin else 'corpus'}: "
            f"{stats['documents']:,} documents, {stats['sentences']:,} "
            f"sentences, {stats['words']:,} words "
            f"({self.heldout_fraction:.0%} held out)")
        self.timings["corpus_s"] = time.perf_counter() - start
        start = time.perf_counter()
        if manifest and not self.vocabulary:
            self.vocabulary = os.path.join(self.shards, "vocab.txt")
        self.tokenizer = setup.load_vocabulary(
            self.vocabulary, self.vocabulary_size, self.lowercase,
            self.corpus, self.output_dir, self.print_fn)
        self.timings["vocabulary_s"] = time.perf_counter() - start
        if self.shards and not manifest:
            start = time.perf_counter()
            self._write_shards(builtin)
            self.timings["shards_s"] = time.perf_counter() - start
        self.train_pairs = setup.training_pairs(
            self.corpus, self.tokenizer, self.sequence_length,
            self.next_sentence_prediction, self.seed, self.shards)
        with distribution.distribution_scope(self.engine):
            self.model = self._model()
        if self.chief:
            with open(self.path("run.json"), "w") as file:
                json.dump(self._settings(), file, indent=2)

    def train(self):
        """Fits the model (from the newest checkpoint when resuming)."""
        # Restored from the run directory on every process; only the
        # chief writes there.
        checkpoints = os.path.join(self.run_dir, "checkpoints")
        with distribution.distribution_scope(self.engine):
            state = PretrainingCheckpoint.restore(self.model, checkpoints)
        self.start_step = state["step"] if state else 0
        if self.start_step:
            self.print_fn(f"Resuming at step {self.start_step} from "
                          f"{PretrainingCheckpoint.latest(checkpoints)}.")
        batches = batch_pairs(
            self.train_pairs, self.tokenizer, self.sequence_length,
            self.global_batch_size, self.next_sentence_prediction,
            whole_word_masking=self.whole_word_masking,
            shuffle_buffer_size=2048,
            # Replays the data stream up to the checkpoint (exact position).
            skip_pairs=self.start_step * self.global_batch_size,
            seed=self.seed,
        )
        # Global batches; `fit` splits each over the replicas and workers.
        batches = distribution.distribute_dataset(batches, self.engine)
        callbacks = []
        if self.chief:
            callbacks = [
                PretrainingLogger(self.output_dir, self.steps,
                                  self.global_batch_size * self.sequence_length,
                                  print_fn=self.print_fn),
                PretrainingCheckpoint(checkpoints, self.checkpoint_every,
                                      extra_state={"seed": self.seed}),
            ]
        start = time.perf_counter()
        if self.start_step < self.steps:
            with distribution.distribution_scope(self.engine):
                self.model.fit(
                    batches,
                    steps_per_epoch=self.log_every,
                    epochs=self.steps // self.log_every,
                    initial_epoch=self.start_step // self.log_every,
                    callbacks=callbacks,
                    shuffle=False,
                    verbose=0,
                )
        self.timings["train_s"] = time.perf_counter() - start

    def evaluate(self, max_batches=50):
        """Held-out masked-token and NSP accuracy vs their baselines."""
        start = time.perf_counter()
        model, engine = report.evaluation_model(self.model, self.engine)
        with distribution.distribution_scope(engine):
            self.results = report.heldout_evaluation(
                model, self.corpus, self.tokenizer, self.sequence_length,
                self.batch_size, self.next_sentence_prediction, self.seed,
                max_batches)
        self.timings["evaluate_s"] = time.perf_counter() - start
        report.write_evaluation(self.path("evaluation.json"), self.results,
                                self.timings)
        return self.results

    def save(self):
        """Writes the final preset (`model/`) and the loss-curve plot.

        On a process other than the chief, removes its scratch directory
        instead.
        """
        if not self.chief:
            shutil.rmtree(self.output_dir, ignore_errors=True)
            return
        self.plot_written = report.write_final_model(
            self.model, self.tokenizer, self.output_dir,
            f"BERT {self.config} pretraining ({keras.config.backend()})",
            getattr(self, "results", None))

    # Helpers -------------------------------------------------------------

    def _configure_distribution(self):
        engine = self.distribution
        if engine is None or isinstance(engine, str):
            engine = distribution.configure_distribution(engine, self.mesh_shape)
        self.engine = engine
        self.replicas = distribution.num_replicas(engine)
        self.global_batch_size = distribution.global_batch_size(
            self.batch_size, engine)
        self.chief = distribution.is_chief(engine)
        if self.chief:
            return
        # Another process of a multi-worker run: the same job, silent, its
        # files in a scratch directory (removed by `save`).
        self.output_dir = tempfile.mkdtemp(prefix="keras-bert-worker-")
        self.print_fn = lambda line: None
        own_vocabulary = os.path.join(self.run_dir, "vocab.txt")
        if self.resume and not self.vocabulary and os.path.isfile(
                own_vocabulary):
            self.vocabulary = own_vocabulary
        if self.write_shards and not setup.shards_to_read(
                self.shards, True, self.corpus_files, self.print_fn):
            # The chief writes them; this process makes its own (the
            # same pairs: they are seeded) rather than wait.
            self.shards = self.path("shards")

    def _settings(self):
        return {
            "config": self.config, "batch_size": self.batch_size,
            "replicas": self.replicas,
            "global_batch_size": self.global_batch_size,
            "distribution": (self.distribution
                             if self.distribution is None
                             or isinstance(self.distribution, str)
                             else type(self.distribution).__name__),
            "sequence_length": self.sequence_length, "seed": self.seed,
            "next_sentence_prediction": self.next_sentence_prediction,
            "corpus_files": self.corpus_files, "steps": self.steps,
            "learning_rate": self.learning_rate, "optimizer": self.optimizer,
            "vocabulary_size": self.vocabulary_size, "shards": self.shards,
        }

    def _write_shards(self, builtin):
        setup.write_training_shards(
            self.corpus, self.tokenizer, self.shards, self.sequence_length,
            self.next_sentence_prediction, self.shard_passes, self.seed,
            metadata={
                "corpus_files": [os.path.abspath(p) for p in self.corpus_files],
                "builtin_corpus": builtin, "corpus_format": self.corpus_format,
                "heldout_fraction": self.heldout_fraction,
                "lowercase": self.lowercase,
            },
            print_fn=self.print_fn,
        )

    def _model(self):
        return setup.build_pretrainer(
            self.config, self.tokenizer.vocabulary_size(),
            self.sequence_length, self.next_sentence_prediction, self.steps,
            self.learning_rate, self.warmup_steps, self.optimizer, self.seed,
            self.jit_compile, self.vocabulary)
