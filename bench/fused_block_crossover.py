"""PyTorch's fused encoder kernel against keras_bert's layers, per shape.

On PyTorch, `TransformerEncoderBlock` runs inference on unpadded rows of
up to `fused_ops.FUSED_BLOCK_MAX_LENGTH` tokens in PyTorch's fused
encoder kernel (`keras_bert._compat.torch_ops.encoder_layer`). This
times `predict_on_batch` of the all-MiniLM-L6-v2 backbone with the kernel
and with the layers (the kernel's probe answered False), interleaved in
one process, on unpadded rows of every shape given, including lengths
past the limit (the kernel forced there too, to show where it loses):
the figures behind the limit, in docs/performance.md ("PyTorch's fused
encoder kernel").

    KERAS_BACKEND=torch .venv/bin/python -m bench.fused_block_crossover \\
        --shapes 1x8,1x128,8x128,32x128,1x256,8x256,8x384,1x512,8x512
"""

import argparse
import os
import statistics
import time
from unittest import mock

os.environ.setdefault("KERAS_BACKEND", "torch")

from keras_bert.memory import tune_malloc_unless_opted_out  # noqa: E402

tune_malloc_unless_opted_out()

from bench import common  # noqa: E402
from bench.bench_inference import parse_shapes  # noqa: E402


def time_sides(model, inputs, rounds):
    from keras_bert import fused_ops
    from keras_bert._compat import torch_ops

    times = {"kernel": [], "layers": []}
    for _ in range(rounds):
        for side in times:
            with mock.patch.object(
                    torch_ops, "encoder_layer_works",
                    return_value=side == "kernel"), mock.patch.object(
                    fused_ops, "FUSED_BLOCK_MAX_LENGTH", 1 << 30):
                model.predict_on_batch(inputs)  # warm the side's path
                start = time.perf_counter()
                model.predict_on_batch(inputs)
                times[side].append(time.perf_counter() - start)
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shapes", default="1x8,1x128,8x128,32x128,1x256,"
                        "8x256,8x384,1x512,8x512")
    parser.add_argument("--token-budget", type=int, default=4000,
                        help="rounds per shape: this over batch x length, "
                        "between 3 and 40")
    args = parser.parse_args()
    import keras

    import keras_bert

    if keras.config.backend() != "torch":
        raise SystemExit("the fused kernel is PyTorch's: KERAS_BACKEND=torch")
    model = keras_bert.BertBackbone.from_preset(common.minilm_dir())
    print(common.machine_info())
    print("| batch x length | kernel ms | layers ms | kernel speed-up "
          "(paired) |\n|---|---:|---:|---:|")
    for batch, length in parse_shapes(args.shapes):
        inputs = common.synthetic_inputs(batch, length, 30522)
        rounds = max(3, min(40, args.token_budget // (batch * length)))
        times = time_sides(model, inputs, rounds)
        speedup = statistics.median(
            [layers / kernel for layers, kernel in zip(times["layers"],
                                                       times["kernel"])])
        print(f"| {batch} x {length} | "
              f"{1000 * statistics.median(times['kernel']):.2f} | "
              f"{1000 * statistics.median(times['layers']):.2f} | "
              f"{speedup:.3f} |", flush=True)


if __name__ == "__main__":
    main()
