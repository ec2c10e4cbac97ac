import json
import math
import os
import random
import time

import keras

from keras_bert.configs import BACKBONE_CONFIGS
from keras_bert.configs import get_backbone_config
from keras_bert.training.loss_curves import plot_loss_curves
from keras_bert.training.loss_curves import read_metrics
from keras_bert.training.optimizers import create_optimizer
from keras_bert.training.pair_shards import MANIFEST
from keras_bert.training.pair_shards import read_pair_shards
from keras_bert.training.pair_shards import shard_manifest
from keras_bert.training.pair_shards import write_corpus_shards
from keras_bert.training.pretraining_checkpoint import PretrainingCheckpoint
from keras_bert.training.pretraining_data import batch_pairs
from keras_bert.training.pretraining_data import pair_dataset
from keras_bert.training.pretraining_data import tokenize_documents
from keras_bert.training.pretraining_evaluation import evaluate_pretraining
from keras_bert.training.pretraining_evaluation import fill_mask_examples
from keras_bert.training.pretraining_evaluation import unigram_counts
from keras_bert.training.pretraining_logger import PretrainingLogger
from keras_bert.training.python_docs_corpus import python_docs_documents
from keras_bert.training.python_docs_corpus import write_sentences_file
from keras_bert.training.text_corpus import TextCorpus

DEFAULT_VOCABULARY_SIZE = 8000

# Settings a resumed run must share with the run that wrote the checkpoint.
_RESUME_KEYS = ("config", "batch_size", "sequence_length", "seed",
                "next_sentence_prediction", "corpus_files", "shards")


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
        steps: int. Training steps (rounded up to a multiple of
            `log_every`).
        batch_size, sequence_length: int.
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
                 resume=False, jit_compile="auto", print_fn=print):
        self.output_dir = output_dir
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
        """Checks the settings, reads the corpus, gets the vocabulary."""
        start = time.perf_counter()
        os.makedirs(self.output_dir, exist_ok=True)
        self._check_run_file()
        manifest = self._existing_shards()
        if manifest:
            self._settings_from_shards(manifest["metadata"])
        builtin = not self.corpus_files or (
            self.corpus_files == self._default_corpus_paths())
        if builtin:
            self.corpus_files = self._write_default_corpus()
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
        self.tokenizer = self._vocabulary()
        self.timings["vocabulary_s"] = time.perf_counter() - start
        if self.shards and not manifest:
            start = time.perf_counter()
            self._write_shards(builtin)
            self.timings["shards_s"] = time.perf_counter() - start
        self.train_pairs = self._train_pairs()
        self.model = self._model()

    def train(self):
        """Fits the model (from the newest checkpoint when resuming)."""
        checkpoints = self.path("checkpoints")
        state = PretrainingCheckpoint.restore(self.model, checkpoints)
        self.start_step = state["step"] if state else 0
        if self.start_step:
            self.print_fn(f"Resuming at step {self.start_step} from "
                          f"{PretrainingCheckpoint.latest(checkpoints)}.")
        batches = batch_pairs(
            self.train_pairs, self.tokenizer, self.sequence_length, self.batch_size,
            self.next_sentence_prediction,
            whole_word_masking=self.whole_word_masking,
            shuffle_buffer_size=2048,
            # Replays the data stream up to the checkpoint (exact position).
            skip_pairs=self.start_step * self.batch_size,
            seed=self.seed,
        )
        callbacks = [
            PretrainingLogger(self.output_dir, self.steps,
                              self.batch_size * self.sequence_length,
                              print_fn=self.print_fn),
            PretrainingCheckpoint(checkpoints, self.checkpoint_every,
                                  extra_state={"seed": self.seed}),
        ]
        start = time.perf_counter()
        if self.start_step < self.steps:
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
        heldout = batch_pairs(
            pair_dataset(self.corpus, self.tokenizer, self.sequence_length,
                         "heldout", self.next_sentence_prediction,
                         seed=self.seed + 1, repeat=False),
            self.tokenizer, self.sequence_length, self.batch_size,
            self.next_sentence_prediction, shuffle_buffer_size=0,
            drop_remainder=False, seed=self.seed + 1,
        )
        tokenized = tokenize_documents(self.corpus.documents("train"),
                                       self.tokenizer)
        counts = unigram_counts(
            (ids for document in tokenized for ids in document),
            self.tokenizer.vocabulary_size(),
            [self.tokenizer.cls_token_id, self.tokenizer.sep_token_id,
             self.tokenizer.pad_token_id],
        )
        self.results = evaluate_pretraining(self.model, heldout, counts,
                                            max_batches)
        self.results["most_frequent_token"] = self.tokenizer.id_to_token(
            int(counts.argmax()))
        self.results["fill_mask_examples"] = fill_mask_examples(
            self.model, self.tokenizer, self.corpus.documents("heldout"),
            seed=self.seed)
        self.timings["evaluate_s"] = time.perf_counter() - start
        with open(self.path("evaluation.json"), "w") as file:
            json.dump({**self.results, "timings": self.timings}, file, indent=2)
        return self.results

    def save(self):
        """Writes the final preset (`model/`) and the loss-curve plot."""
        from keras_bert.checkpoints import save_to_preset

        save_to_preset(self.model, self.path("model"), tokenizer=self.tokenizer)
        baselines = {"nsp_accuracy": 0.5}
        if getattr(self, "results", None):
            baselines.update(mlm_loss=self.results["unigram_loss"],
                             mlm_accuracy=self.results["unigram_accuracy"])
        if os.path.exists(self.path("metrics.jsonl")):
            self.plot_written = plot_loss_curves(
                read_metrics(self.path("metrics.jsonl")),
                self.path("loss_curves.png"),
                title=f"BERT {self.config} pretraining "
                      f"({keras.config.backend()})",
                baselines=baselines,
            )

    # Helpers -------------------------------------------------------------

    def _settings(self):
        return {
            "config": self.config, "batch_size": self.batch_size,
            "sequence_length": self.sequence_length, "seed": self.seed,
            "next_sentence_prediction": self.next_sentence_prediction,
            "corpus_files": self.corpus_files, "steps": self.steps,
            "learning_rate": self.learning_rate, "optimizer": self.optimizer,
            "vocabulary_size": self.vocabulary_size, "shards": self.shards,
        }

    def _check_run_file(self):
        path = self.path("run.json")
        if os.path.exists(path):
            if not self.resume:
                raise ValueError(
                    f"{self.output_dir} already holds a pretraining run. Pass "
                    "--resume to continue it, or choose a new --output."
                )
            with open(path) as file:
                saved = json.load(file)
            if not self.corpus_files:
                # The built-in corpus was written into the run directory.
                self.corpus_files = saved["corpus_files"]
            changed = {k: (saved.get(k), v) for k, v in self._settings().items()
                       if k in _RESUME_KEYS and saved.get(k) != v}
            if changed:
                details = "; ".join(f"{k}: {a!r} then, {b!r} now"
                                    for k, (a, b) in changed.items())
                raise ValueError(
                    f"Cannot resume {self.output_dir} with different settings "
                    f"({details}). Use the original command, or a new --output."
                )

    def _write_run_file(self):
        with open(self.path("run.json"), "w") as file:
            json.dump(self._settings(), file, indent=2)

    def _train_pairs(self):
        if not self.shards:
            return pair_dataset(
                self.corpus, self.tokenizer, self.sequence_length, "train",
                self.next_sentence_prediction, seed=self.seed,
            )
        # Checks the shards' length, NSP setting and vocabulary now,
        # before the model is built.
        return read_pair_shards(
            self.shards, repeat=True, shuffle_seed=self.seed,
            sequence_length=self.sequence_length,
            next_sentence_prediction=self.next_sentence_prediction,
            tokenizer=self.tokenizer,
        )

    def _default_corpus_paths(self, num_shards=8):
        return [self.path("corpus", f"python_docs-{i:05d}-of-{num_shards:05d}.txt")
                for i in range(num_shards)]

    def _write_default_corpus(self):
        paths = self._default_corpus_paths()
        if not all(os.path.exists(p) for p in paths):
            documents = python_docs_documents()
            # Shuffled into shards, so per-pass file shuffling mixes them.
            random.Random(0).shuffle(documents)
            for i, path in enumerate(paths):
                write_sentences_file(documents[i::len(paths)], path)
        return paths

    def _existing_shards(self):
        """The manifest of `shards` when it should be read (not written)."""
        if not self.shards:
            return None
        if self.write_shards and not os.path.isfile(
                os.path.join(self.shards, MANIFEST)):
            return None
        manifest = shard_manifest(self.shards)
        if self.write_shards:
            self.print_fn(f"Reusing the complete shards in {self.shards}.")
        written_from = manifest["metadata"].get("corpus_files")
        if (self.write_shards and self.corpus_files and written_from
                and [os.path.abspath(p) for p in self.corpus_files]
                != written_from):
            raise ValueError(
                f"{self.shards} holds shards of another corpus "
                f"({len(written_from)} files from {written_from[0]}). "
                "Choose a new --write-shards directory."
            )
        return manifest

    def _settings_from_shards(self, metadata):
        # The shards' corpus (unless one is given), split and casing: the
        # held-out evaluation then reads text the shards left out.
        if not self.corpus_files and not metadata.get("builtin_corpus"):
            self.corpus_files = metadata["corpus_files"]
            self.corpus_format = metadata["corpus_format"]
        self.heldout_fraction = metadata["heldout_fraction"]
        self.lowercase = metadata["lowercase"]

    def _write_shards(self, builtin):
        self.print_fn(f"Writing the training pairs ({self.shard_passes} "
                      f"pass(es) over the corpus) to {self.shards}...")
        manifest = write_corpus_shards(
            self.corpus, self.tokenizer, self.shards, self.sequence_length,
            self.next_sentence_prediction, self.shard_passes, self.seed,
            metadata={
                "corpus_files": [os.path.abspath(p) for p in self.corpus_files],
                "builtin_corpus": builtin, "corpus_format": self.corpus_format,
                "heldout_fraction": self.heldout_fraction,
                "lowercase": self.lowercase,
            },
        )
        self.print_fn(f"Wrote {manifest['num_pairs']:,} pairs in "
                      f"{len(manifest['shards'])} shard(s).")

    def _vocabulary(self):
        from keras_bert.preprocessing import BertTokenizer
        from keras_bert.preprocessing import train_vocabulary

        path = self.vocabulary or self.path("vocab.txt")
        if self.vocabulary and not os.path.isfile(path):
            raise FileNotFoundError(f"Vocabulary file not found: {path}")
        if not os.path.exists(path):
            size = self.vocabulary_size or DEFAULT_VOCABULARY_SIZE
            self.print_fn(f"Learning a {size}-token WordPiece vocabulary "
                          "from the training text...")
            sentences = (s for d in self.corpus.documents("train") for s in d)
            train_vocabulary(sentences, size,
                             lowercase=self.lowercase, output_path=path)
        tokenizer = BertTokenizer(path, lowercase=self.lowercase)
        size = tokenizer.vocabulary_size()
        if self.vocabulary and self.vocabulary_size not in (None, size):
            raise ValueError(
                f"--vocab-size is {self.vocabulary_size} but the vocabulary "
                f"{path} has {size} tokens. Drop --vocab-size (the model "
                "takes the vocabulary's size) or pass the matching file."
            )
        if os.path.abspath(path) != os.path.abspath(self.path("vocab.txt")):
            tokenizer.save_to_preset(self.output_dir)
        return tokenizer

    def _model(self):
        from keras_bert.models.bert_backbone import BertBackbone
        from keras_bert.models.bert_pretrainer import BertPretrainer

        size = self.tokenizer.vocabulary_size()
        keras.utils.set_random_seed(self.seed)
        if isinstance(self.config, dict) or self.config in BACKBONE_CONFIGS:
            config = (dict(self.config) if isinstance(self.config, dict)
                      else get_backbone_config(self.config))
            config["vocabulary_size"] = size
            config["max_sequence_length"] = max(
                config.get("max_sequence_length", 512), self.sequence_length)
            model = BertPretrainer(
                BertBackbone(**config),
                next_sentence_prediction=self.next_sentence_prediction,
            )
        else:
            model = BertPretrainer.from_preset(self.config)
            if model.backbone.vocabulary_size != size:
                raise ValueError(
                    f"The model in {self.config} has a vocabulary of "
                    f"{model.backbone.vocabulary_size} tokens but the "
                    f"vocabulary {self.vocabulary or 'learned'} has {size}. "
                    "Pass the model's own vocab.txt with --vocab."
                )
        optimizer = create_optimizer(
            total_steps=self.steps, learning_rate=self.learning_rate,
            warmup_steps=self.warmup_steps, optimizer=self.optimizer,
        )
        model.compile(optimizer=optimizer, jit_compile=self.jit_compile)
        self._write_run_file()
        return model
