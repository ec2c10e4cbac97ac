import json
import os
import shutil
import tempfile
import time

import keras

from keras_bert.training import distribution
from keras_bert.training.pretraining import pretraining_report as report
from keras_bert.training.pretraining import pretraining_setup as setup
from keras_bert.training.pretraining.budget_replan import BudgetReplan
from keras_bert.training.pretraining.pretraining_checkpoint import (
    PretrainingCheckpoint,
)
from keras_bert.training.pretraining.pretraining_data import batch_pairs
from keras_bert.training.pretraining.pretraining_logger import (
    PretrainingLogger,
)
from keras_bert.training.pretraining.pretraining_settings import (
    PretrainingSettings,
)
from keras_bert.training.pretraining.step_budget import StepBudget
from keras_bert.training.pretraining.text_corpus import TextCorpus


class PretrainingJob:
    """One pretraining run from raw text to a saved model, as the CLI runs it.

    In `output_dir`: `run.json` (the settings), `corpus/` (the built-in
    corpus when no files are given), `vocab.txt`, `checkpoints/`,
    `metrics.csv`, `metrics.jsonl`, `tensorboard/`, `loss_curves.png`,
    `evaluation.json` and the final preset `model/` (loadable with
    `BertPretrainer.from_preset`).

    The run is described by a `PretrainingSettings` (see there for every
    field). Without `steps` it trains for what is left of `minutes` after
    the corpus and vocabulary: it times a few steps, restores the model,
    and fixes the number of steps (written to `run.json`, so a resumed run
    keeps it); the run is then the same as one given those `steps`, unless
    its own steps run faster or slower than the timed ones: at 20% and 50%
    of the planned steps it plans again from their speed (`BudgetReplan`),
    resizing the schedule so the run ends on time.

    Training pairs are streamed from the text, or read from TFRecord
    shards (`shards`; see `keras_bert.training.pair_shards`). Shards
    remember their corpus and vocabulary: without `corpus_files` the
    held-out evaluation reads the corpus they were written from.

    With a distribution (`settings.distribution`, or a configured `engine`
    for `multi_host=`/`tpu=`), the model is built, compiled and trained
    inside the engine's scope (see `keras_bert.training.distribution`):
    each step takes a global batch of `batch_size` x replicas, `steps` and
    the learning-rate schedule count global steps, and only the chief
    process writes `output_dir` (other processes work in a temporary
    directory that `save` removes).

    Args:
        output_dir: str. Run directory.
        settings: `PretrainingSettings` or None (the defaults).
        engine: an engine `configure_distribution` returned, or None.
        print_fn: callable or None. Receives progress lines.
        started: float or None. `time.perf_counter()` when the run began
            (the budget counts from there; None: now).
        **overrides: `PretrainingSettings` fields to replace.

    Example:
    >>> job = PretrainingJob("runs/docs", config="tiny", steps=600)
    >>> job.settings.steps, job.settings.recipe
    (600, 'budget')
    >>> # results = job.run()   # prepare, train, evaluate, save
    """

    def __init__(self, output_dir, settings=None, engine=None, print_fn=print,
                 started=None, **overrides):
        settings = (settings or PretrainingSettings()).replace(**overrides)
        if settings.shards:
            settings = settings.replace(shards=os.path.abspath(settings.shards))
        self.settings = settings.resolved()
        self.output_dir = self.run_dir = output_dir
        self.engine = engine
        self.print_fn = print_fn or (lambda line: None)
        self.started = time.perf_counter() if started is None else started
        self.replicas = 1
        self.global_batch_size = self.settings.batch_size
        self.chief = True
        self.steps = self.log_every = self.checkpoint_every = None
        self.budget = self._logger = None
        # A budget run's first plan: {"steps", "steps_per_second"}.
        self.first_plan = None
        if self.settings.steps:
            self._plan_steps(self.settings.steps)
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
        builds the model.

        When it fails (a missing or empty corpus, a bad vocabulary), an
        output directory it created is removed again.
        """
        created = not os.path.exists(self.output_dir)
        try:
            self._prepare()
        except BaseException:
            if created:
                shutil.rmtree(self.output_dir, ignore_errors=True)
            raise

    def _prepare(self):
        self._configure_distribution()
        start = time.perf_counter()
        os.makedirs(self.output_dir, exist_ok=True)
        saved = setup.check_run_file(self.path("run.json"), self._record(),
                                     self.settings.resume, self.output_dir)
        if saved:
            self.settings = self.settings.replace(
                corpus_files=self.settings.corpus_files
                or saved["corpus_files"])
            if self.steps is None and saved.get("log_every_steps"):
                # The plan as the run left it: a re-planned budget run's
                # steps need not be what `step_plan` would round them to.
                self.steps = saved["steps"]
                self.log_every = saved["log_every_steps"]
                self.checkpoint_every = saved["checkpoint_every_steps"]
            elif self.steps is None and saved.get("steps"):
                self._plan_steps(saved["steps"])
        self.settings, shard_dir, write_shards = setup.plan_shards(
            self.settings, self.chief, self.output_dir, self.print_fn)
        builtin = setup.uses_builtin_corpus(self.settings, self.output_dir)
        if builtin:
            self.settings = self.settings.replace(
                corpus_files=setup.write_default_corpus(self.output_dir),
                corpus_format="sentences")
        s = self.settings
        self.corpus = TextCorpus(s.corpus_files, s.corpus_format,
                                 s.heldout_fraction)
        stats = self.corpus_stats = self.corpus.check(
            require_pairs=s.next_sentence_prediction)
        self.print_fn(
            f"{'built-in Python docs' if builtin else 'corpus'}: "
            f"{stats['documents']:,} documents, {stats['sentences']:,} "
            f"sentences, {stats['words']:,} words "
            f"({s.heldout_fraction:.0%} held out)")
        self.timings["corpus_s"] = time.perf_counter() - start
        start = time.perf_counter()
        self.tokenizer = setup.load_vocabulary(s, self.corpus,
                                               self.output_dir, self.print_fn)
        self.timings["vocabulary_s"] = time.perf_counter() - start
        if write_shards:
            start = time.perf_counter()
            setup.write_training_shards(s, self.corpus, self.tokenizer,
                                        shard_dir, builtin, self.print_fn)
            self.timings["shards_s"] = time.perf_counter() - start
        self.train_pairs = setup.training_pairs(s, self.corpus,
                                                self.tokenizer, shard_dir)
        with distribution.distribution_scope(self.engine):
            # A budget run resizes the schedule once its steps are known.
            self.model = setup.build_pretrainer(
                s, self.tokenizer.vocabulary_size(), self.steps or 1)
        self._write_run_file()

    def train(self):
        """Fits the model (from the newest checkpoint when resuming)."""
        s = self.settings
        # Restored from the run directory on every process; only the
        # chief writes there.
        checkpoints = os.path.join(self.run_dir, "checkpoints")
        if self.steps is None:
            self._fix_steps()
        skipped = []
        checkpoint = PretrainingCheckpoint.latest(checkpoints, skipped)
        for path, problem in skipped:
            self.print_fn(f"Skipping the torn checkpoint {path}: {problem}.")
        state = None
        with distribution.distribution_scope(self.engine):
            if checkpoint:
                state = PretrainingCheckpoint.load(self.model, checkpoint)
                # The checkpoint may predate the last re-plan of a budget
                # run: `run.json` has the run's length.
                setup.resize_pretrainer_schedule(self.model, s, self.steps)
        self.start_step = state["step"] if state else 0
        if self.start_step:
            self.print_fn(f"Resuming at step {self.start_step} from "
                          f"{checkpoint}.")
        log_every = self.log_every
        # Global batches; `fit` splits each over the replicas and workers.
        batches = distribution.distribute_dataset(
            self.training_batches(skip_steps=self.start_step), self.engine)
        callbacks = []
        if self.chief:
            self._logger = PretrainingLogger(
                self.output_dir, self.steps,
                self.global_batch_size * s.sequence_length,
                print_fn=self.print_fn)
            callbacks = [
                self._logger,
                PretrainingCheckpoint(checkpoints, self.checkpoint_every,
                                      extra_state={"seed": s.seed}),
            ]
        fit_steps = self.steps
        if self.budget is not None and not self.start_step:
            # Room to grow if the run trains faster than it was timed.
            fit_steps = 2 * self.steps
            callbacks.append(BudgetReplan(self.budget, self.steps, log_every,
                                          fit_steps, self._replan))
        start = time.perf_counter()
        if self.start_step < self.steps:
            with distribution.distribution_scope(self.engine):
                self.model.fit(
                    batches,
                    steps_per_epoch=log_every,
                    epochs=fit_steps // log_every,
                    initial_epoch=self.start_step // log_every,
                    callbacks=callbacks,
                    shuffle=False,
                    verbose=0,
                )
        self.timings["train_s"] = time.perf_counter() - start

    def evaluate(self, max_batches=100):
        """Held-out masked-token and NSP accuracy vs their baselines."""
        s = self.settings
        start = time.perf_counter()
        model, engine = report.evaluation_model(self.model, self.engine)
        with distribution.distribution_scope(engine):
            self.results = report.heldout_evaluation(
                model, self.corpus, self.tokenizer, s.sequence_length,
                s.batch_size, s.next_sentence_prediction, s.seed,
                max_batches)
        self.timings["evaluate_s"] = time.perf_counter() - start
        shortfall = self.budget_shortfall()
        if shortfall:
            self.results["budget_shortfall"] = shortfall
        report.write_evaluation(self.path("evaluation.json"), self.results,
                                self.timings)
        return self.results

    def budget_shortfall(self, share=0.9):
        """A budget run that trained under `share` of the steps it first
        planned (the machine slowed down, re-planning cut the run):
        {"planned_steps", "trained_steps", "planned_steps_per_second",
        "trained_steps_per_second"}; None otherwise."""
        if not self.first_plan or self.steps >= share * (
                self.first_plan["steps"]):
            return None
        seconds = self.timings.get("train_s") or float("nan")
        return {"planned_steps": self.first_plan["steps"],
                "trained_steps": self.steps,
                "planned_steps_per_second":
                    self.first_plan["steps_per_second"],
                "trained_steps_per_second":
                    (self.steps - self.start_step) / seconds}

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
            f"BERT {self.settings.config} pretraining "
            f"({keras.config.backend()})",
            getattr(self, "results", None))

    # Helpers -------------------------------------------------------------

    def training_batches(self, skip_steps=0):
        """The training stream: `(x, y, sample_weight)` global batches,
        from its start or after `skip_steps` steps (exactly where a run
        that took them stands)."""
        s = self.settings
        return batch_pairs(
            self.train_pairs, self.tokenizer, s.sequence_length,
            self.global_batch_size, s.next_sentence_prediction,
            mask_selection_rate=s.mask_rate,
            mask_token_rate=s.mask_token_rate,
            whole_word_masking=s.whole_word_masking,
            shuffle_buffer_size=2048,
            # Replays the data stream up to the checkpoint (exact position).
            skip_pairs=skip_steps * self.global_batch_size,
            seed=s.seed,
        )

    def _fix_steps(self):
        """Sets `steps` from the budget left and the measured step rate."""
        if self.engine is not None:
            raise ValueError(
                "A time budget needs one device to time its steps; give "
                "--steps with --distribution.")
        budget = self.budget = StepBudget(self.settings.minutes * 60,
                                          self.started)
        rate = budget.measure_step_rate(self.model, self.training_batches())
        self.set_steps(budget.steps(rate))
        self.first_plan = {"steps": self.steps, "steps_per_second": rate}
        self.print_fn(
            f"time budget: {self.settings.minutes:g} min, "
            f"{budget.remaining():.0f} s left after set-up at "
            f"{rate:.2f} steps/s -> {self.steps:,} steps")
        self._write_run_file()

    def set_steps(self, steps):
        """Fixes the run's length (rounded up to whole logged intervals)
        and sizes the compiled optimizer's schedule for it: on the initial
        weights and optimizer state (`StepBudget.measure_step_rate` puts
        them back), exactly the run `steps=` would have made, without
        compiling the train step again."""
        self._plan_steps(steps)
        setup.resize_pretrainer_schedule(self.model, self.settings,
                                         self.steps)

    def _replan(self, steps, rate):
        """`BudgetReplan`'s new length: the schedule, the logger's total
        and `run.json` follow it; the logged intervals stay."""
        self.print_fn(f"time budget: training at {rate:.2f} steps/s -> "
                      f"{steps:,} steps")
        self.steps = steps
        setup.resize_pretrainer_schedule(self.model, self.settings, steps)
        self._logger.total_steps = steps
        self._write_run_file()

    def _plan_steps(self, steps):
        self.steps, self.log_every, self.checkpoint_every = setup.step_plan(
            self.settings, steps)

    def _configure_distribution(self):
        s = self.settings
        engine = self.engine
        if engine is None and s.distribution:
            engine = distribution.configure_distribution(s.distribution,
                                                         s.mesh_shape)
        self.engine = engine
        self.replicas = distribution.num_replicas(engine)
        self.global_batch_size = distribution.global_batch_size(
            s.batch_size, engine)
        self.chief = distribution.is_chief(engine)
        if self.chief:
            return
        # Another process of a multi-worker run: the same job, silent, its
        # files in a scratch directory (removed by `save`).
        self.output_dir = tempfile.mkdtemp(prefix="keras-bert-worker-")
        self.print_fn = lambda line: None
        own_vocabulary = os.path.join(self.run_dir, "vocab.txt")
        if s.resume and not s.vocabulary and os.path.isfile(own_vocabulary):
            self.settings = s.replace(vocabulary=own_vocabulary)

    def _record(self):
        """What `run.json` holds: the settings and the derived sizes."""
        record = self.settings.to_dict()
        record.update(replicas=self.replicas,
                      global_batch_size=self.global_batch_size,
                      steps=self.steps, log_every_steps=self.log_every,
                      checkpoint_every_steps=self.checkpoint_every)
        return record

    def _write_run_file(self):
        if self.chief:
            with open(self.path("run.json"), "w") as file:
                json.dump(self._record(), file, indent=2)
