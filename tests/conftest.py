import os

# Tests stay on the CPU and quiet; the backend comes from KERAS_BACKEND.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# The suite compiles hundreds of small programs and runs each a few times:
# XLA's optimizing passes cost more than they save there (the JAX pass
# 22:43 -> 16:09 on 2 cores; a tiny TensorFlow fit 8.1 s -> 5.3 s). Same
# ops, same tolerances; subprocesses inherit both (tests that start
# processes with their own XLA_FLAGS keep JAX's); users and bench/ keep
# XLA's defaults.
os.environ.setdefault("JAX_DISABLE_MOST_OPTIMIZATIONS", "1")
if "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = " ".join(filter(None, (
        os.environ.get("XLA_FLAGS"), "--xla_backend_optimization_level=0",
        "--xla_llvm_disable_expensive_passes=true")))


# The suite runs as the `keras-bert` commands do, with glibc keeping freed
# memory (`keras_bert.tune_malloc`, which importing keras_bert no longer
# does), set before any test starts a backend's threads.
from keras_bert.memory import tune_malloc_unless_opted_out  # noqa: E402

tune_malloc_unless_opted_out()


def pytest_report_header(config):
    import keras

    return f"keras {keras.__version__}, backend: {keras.config.backend()}"


def pytest_collection_modifyitems(config, items):
    # pytest-xdist (tests/run.sh: --dist loadfile) hands out whole files in
    # collection order. Files with tests marked slow go first, so that a
    # pass does not end with one worker on a long file and the other idle.
    slow_files = {item.path for item in items
                  if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)
