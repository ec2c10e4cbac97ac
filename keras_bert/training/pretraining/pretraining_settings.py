import dataclasses

# The training recipes `--recipe` names. "budget" is the default, chosen by
# the ablations in docs/pretraining.md for runs of minutes on a CPU; "bert"
# is the paper's (Devlin et al., 2019, appendix A.2) on the same model and
# vocabulary. A setting given explicitly overrides its recipe's value.
RECIPES = {
    "budget": {
        "sequence_length": 64,
        "batch_size": 32,
        # 2e-3 over 1e-3: +4 points at 4 minutes; 3e-3 and 4e-3 learn less,
        # and RoBERTa's beta_2 of 0.98 is no better (docs/pretraining.md).
        "learning_rate": 2e-3,
        "beta_2": 0.999,
        "warmup_fraction": 0.06,
        "dropout": 0.0,
        # BERT's 0.02 left some seeds on the unigram plateau for much of
        # the run; 0.05 did not (4 seeds at 4 minutes, docs/pretraining.md).
        "initializer_range": 0.05,
        "mask_rate": 0.3,
        "mask_token_rate": 0.8,
        # At 4 minutes NSP is not learned reliably held out and does not
        # help MRPC or SST-2 (docs/pretraining.md, RoBERTa's finding too).
        "next_sentence_prediction": False,
    },
    "bert": {
        "sequence_length": 128,
        "batch_size": 256,
        "learning_rate": 1e-4,
        "beta_2": 0.999,
        "warmup_fraction": 0.01,
        "dropout": 0.1,
        "initializer_range": 0.02,
        "mask_rate": 0.15,
        "mask_token_rate": 0.8,
        "next_sentence_prediction": True,
    },
}
RECIPE_KEYS = tuple(RECIPES["bert"])


@dataclasses.dataclass
class PretrainingSettings:
    """Everything that defines a pretraining run, in one place.

    `keras-bert pretrain` builds it from its arguments (the argument names
    are the field names) and `PretrainingJob` reads it; `run.json` in the
    run directory stores it. Fields left None in `RECIPE_KEYS` take the
    value of `recipe`; `resolved()` returns the settings with them filled.

    Args:
        corpus_files: list of str. Text files; empty builds the built-in
            Python-documentation corpus.
        corpus_format: str. "auto", "sentences" or "paragraphs".
        vocabulary: str or None. A vocab.txt; None learns one.
        vocabulary_size: int or None. Size of a learned vocabulary (None:
            8,000); with `vocabulary`, must match its size.
        lowercase: bool. Uncased tokenization.
        config: str or dict. A size name ("tiny", "mini", ...), a preset
            directory to continue from, or `BertBackbone` arguments (the
            vocabulary size is filled in).
        recipe: str. "budget" (tuned for short runs) or "bert" (the
            paper's), see `RECIPES`.
        steps: int or None. Training steps (global); None derives them
            from `minutes` and the measured step rate.
        minutes: float or None. Wall-clock budget of the whole run
            (corpus, vocabulary, training, evaluation), used when `steps`
            is None.
        batch_size: int or None. Sequences per replica and step.
        sequence_length: int or None.
        learning_rate: float or None. Peak learning rate.
        beta_2: float or None. The optimizer's second-moment decay.
        warmup_fraction: float or None. Share of the steps warming up.
        warmup_steps: int or None. Warmup length; overrides the fraction.
        dropout: float or None. Dropout of the model (attention too).
        initializer_range: float or None. Stddev of the truncated-normal
            initialization of a new model's weights (not used when
            continuing from a preset).
        mask_rate: float or None. Share of the tokens to predict.
        mask_token_rate: float or None. Share of the predicted tokens
            shown as `[MASK]`; the rest is split evenly between a random
            token and the token itself (BERT's 0.8: 80/10/10).
        optimizer: str. "adamw" or "lamb".
        next_sentence_prediction: bool or None. False trains masked LM
            only (on single contiguous segments).
        whole_word_masking: bool.
        heldout_fraction: float. Share of the text kept for evaluation.
        log_every: int or None. Steps per logged interval.
        checkpoint_every: int or None. Steps between checkpoints.
        seed: int. Seeds the data stream, masks and initialization.
        shards: str or None. A pair-shard directory to train from.
        write_shards: bool. Write `shards` from the corpus first.
        shard_passes: int. Passes over the corpus to write.
        resume: bool. Continue the run in the output directory.
        distribution: str or None. "data_parallel" or "model_parallel".
        mesh_shape: tuple of int or None. With `distribution`.
        jit_compile: bool or "auto". Passed to `compile`.

    Example:
    >>> settings = PretrainingSettings(recipe="bert", learning_rate=3e-4)
    >>> resolved = settings.resolved()
    >>> resolved.learning_rate, resolved.batch_size, resolved.dropout
    (0.0003, 256, 0.1)
    """

    corpus_files: list = dataclasses.field(default_factory=list)
    corpus_format: str = "auto"
    vocabulary: str = None
    vocabulary_size: int = None
    lowercase: bool = True
    config: object = "tiny"
    recipe: str = "budget"
    steps: int = None
    # 4.5 of the 5 minutes a newcomer's first run may take: without the
    # end-of-fit pause (prefetch_for_fit) a 4.5-minute run ends at 4:30.
    minutes: float = 4.5
    batch_size: int = None
    sequence_length: int = None
    learning_rate: float = None
    beta_2: float = None
    warmup_fraction: float = None
    warmup_steps: int = None
    dropout: float = None
    initializer_range: float = None
    mask_rate: float = None
    mask_token_rate: float = None
    optimizer: str = "adamw"
    next_sentence_prediction: bool = None
    whole_word_masking: bool = False
    heldout_fraction: float = 0.05
    log_every: int = None
    checkpoint_every: int = None
    seed: int = 0
    shards: str = None
    write_shards: bool = False
    shard_passes: int = 1
    resume: bool = False
    distribution: str = None
    mesh_shape: tuple = None
    jit_compile: object = "auto"

    def __post_init__(self):
        if self.recipe not in RECIPES:
            raise ValueError(
                f"Unknown recipe {self.recipe!r}: use one of "
                f"{', '.join(sorted(RECIPES))}.")
        if self.steps is None and not self.minutes:
            raise ValueError("Give the run a length: steps or minutes.")
        self.corpus_files = list(self.corpus_files or [])

    def resolved(self):
        """A copy with every recipe-controlled field filled in."""
        recipe = RECIPES[self.recipe]
        return dataclasses.replace(self, **{
            key: recipe[key] for key in RECIPE_KEYS
            if getattr(self, key) is None})

    def replace(self, **changes):
        """A copy with `changes` applied (`dataclasses.replace`)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def field_names(cls):
        return [field.name for field in dataclasses.fields(cls)]
