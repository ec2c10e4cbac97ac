"""The kinds of distributed run, in a module that imports no Keras (the
command line lists them in `--help` without loading a backend)."""

DATA_PARALLEL = "data_parallel"
MODEL_PARALLEL = "model_parallel"
KINDS = (DATA_PARALLEL, MODEL_PARALLEL)
