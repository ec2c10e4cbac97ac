"""keras_bert's exact GELU against the backend's own kernel, side by side.

Checks that `keras_bert.layers.activations.gelu_exact` (what the encoder's
feed-forward applies for "gelu") equals the float64 erf formula and the
backend's native exact GELU (`torch.nn.functional.gelu`, `jax.nn.gelu`,
`tf.nn.gelu`), then times both on the feed-forward's activation tensor,
alternating one call of each so both see the same load:

    KERAS_BACKEND=torch OMP_NUM_THREADS=1 .venv/bin/python -m \
        bench.profile_gelu --calls 300

Prints the largest absolute differences and the median wall and CPU
times (ms) and their ratio (keras_bert / native; 1.00 is the same speed).
"""

import argparse
import math
import statistics
import time

import numpy as np


def native_gelu():
    """The backend's exact-GELU kernel, called directly."""
    import keras

    backend = keras.config.backend()
    if backend == "torch":
        import torch

        return torch.nn.functional.gelu
    if backend == "jax":
        import jax

        return jax.jit(lambda x: jax.nn.gelu(x, approximate=False))
    if backend == "tensorflow":
        import tensorflow as tf

        return tf.function(lambda x: tf.nn.gelu(x, approximate=False),
                           jit_compile=True)
    raise ValueError(f"no native GELU for backend {backend!r}")


def reference_gelu(x):
    """0.5 x (1 + erf(x / sqrt 2)) in float64."""
    erf = np.vectorize(math.erf)
    x = x.astype("float64")
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def keras_bert_gelu():
    """keras_bert's "gelu", compiled the way the backbone runs it."""
    import keras

    from keras_bert.layers.activations import get_activation

    fn = get_activation("gelu")
    backend = keras.config.backend()
    if backend == "jax":
        import jax

        return jax.jit(fn)
    if backend == "tensorflow":
        import tensorflow as tf

        return tf.function(fn, jit_compile=True)
    return fn  # eager on torch, as in `predict_on_batch`


def wait(value):
    """Waits for an asynchronous (JAX) result; the others are synchronous."""
    import keras

    if keras.config.backend() == "jax":
        import jax

        return jax.block_until_ready(value)
    return value


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=8 * 128,
                        help="tokens (batch x length)")
    parser.add_argument("--columns", type=int, default=1536,
                        help="feed-forward width")
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()

    import keras

    rng = np.random.default_rng(0)
    host = (3 * rng.standard_normal((args.rows, args.columns))).astype(
        "float32")
    x = keras.ops.convert_to_tensor(host)
    ours, native = keras_bert_gelu(), native_gelu()
    if keras.config.backend() == "torch":
        import torch

        torch.set_grad_enabled(False)
    got, want = (keras.ops.convert_to_numpy(fn(x)) for fn in (ours, native))
    print(f"backend {keras.config.backend()}, x {host.shape}")
    print(f"max |keras_bert - native|    = {np.abs(got - want).max():.2e}")
    print(f"max |keras_bert - float64 erf| = "
          f"{np.abs(got - reference_gelu(host)).max():.2e}")

    # Wall and process CPU time; the order alternates every call so that
    # neither always runs first (right after the other freed its output).
    times = {(name, clock): [] for name in ("keras_bert", "native")
             for clock in ("wall", "cpu")}
    pairs = [("keras_bert", ours), ("native", native)]
    for call in range(args.calls):
        for name, fn in pairs[call % 2:] + pairs[:call % 2]:
            start, start_cpu = time.perf_counter(), time.process_time()
            wait(fn(x))
            times[name, "wall"].append(time.perf_counter() - start)
            times[name, "cpu"].append(time.process_time() - start_cpu)
    medians = {key: statistics.median(t) for key, t in times.items()}
    for clock in ("wall", "cpu"):
        ours_s, native_s = medians["keras_bert", clock], medians["native", clock]
        print(f"{clock:>4}: keras_bert {1000 * ours_s:.3f} ms, native "
              f"{1000 * native_s:.3f} ms (medians of {args.calls}), "
              f"keras_bert / native = {ours_s / native_s:.3f}")


if __name__ == "__main__":
    main()
