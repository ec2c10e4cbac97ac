"""The same BERT on TensorFlow, JAX and PyTorch gives the same numbers.

    python examples/backend_parity.py --all-backends --output runs/parity

runs this script once per backend (`KERAS_BACKEND=tensorflow`, `jax`,
`torch`, each in its own process, since Keras picks its backend at import)
and compares the outputs. One backend at a time:

    KERAS_BACKEND=jax python examples/backend_parity.py --output runs/parity

Weights and inputs come from NumPy's seeded generator, not from the
backend's own random ops (which differ per backend), so every backend runs
exactly the same model; `--preset DIR` uses a real checkpoint instead. The
outputs are written to `OUTPUT/<backend>.npz` and compared with those of
the other backends already there; differences are float32 round-off.
With `--all-backends` the largest difference of each pair of backends is
also written to `OUTPUT/metrics.json`. The script exits with an error when
two backends differ by more than 1e-4.
"""

import argparse
import glob
import json
import os
import subprocess
import sys

import numpy as np

BACKENDS = ("tensorflow", "jax", "torch")


def run_one_backend(args):
    import keras
    from keras import ops

    from keras_bert.models import BertBackbone

    rng = np.random.default_rng(args.seed)
    if args.preset:
        backbone = BertBackbone.from_preset(args.preset, dropout=0.0)
    else:
        backbone = BertBackbone.from_preset(args.config, dropout=0.0)
        # Seeded NumPy weights, identical on every backend.
        backbone.set_weights([
            (1.0 if "gamma" in w.path else 0.0)
            + rng.normal(0.0, 0.05, w.shape).astype("float32")
            for w in backbone.weights
        ])
    length = args.sequence_length
    padding_mask = np.ones((args.batch_size, length), "int32")
    padding_mask[1::2, length // 2:] = 0  # every other row half padding
    inputs = {
        "token_ids": rng.integers(5, backbone.vocabulary_size,
                                  (args.batch_size, length)).astype("int32")
        * padding_mask,
        "segment_ids": (np.arange(length)[None] >= length // 3).astype(
            "int32").repeat(args.batch_size, 0) * padding_mask,
        "padding_mask": padding_mask,
    }
    outputs = backbone(inputs, training=False)
    arrays = {name: ops.convert_to_numpy(outputs[name])
              for name in ("sequence_output", "pooled_output")}
    backend = keras.config.backend()
    os.makedirs(args.output, exist_ok=True)
    np.savez(os.path.join(args.output, f"{backend}.npz"), **arrays)
    print(f"{backend}: pooled_output checksum "
          f"{float(np.abs(arrays['pooled_output']).sum()):.5f}")
    return compare(args.output)


def compare(output):
    results = {os.path.basename(p)[:-4]: dict(np.load(p))
               for p in sorted(glob.glob(os.path.join(output, "*.npz")))}
    names = sorted(results)
    for name in names[1:]:
        for key, value in results[name].items():
            if value.shape != results[names[0]][key].shape:
                raise SystemExit(
                    f"{output}/{name}.npz holds {key} of shape {value.shape} "
                    f"but {names[0]}.npz has {results[names[0]][key].shape}: "
                    "a run with other settings. Empty the folder or use "
                    "another --output.")
    differences = {
        f"{a}_vs_{b}": max(float(np.abs(results[a][k] - results[b][k]).max())
                           for k in results[a])
        for i, a in enumerate(names) for b in names[i + 1:]
    }
    print(json.dumps({"max_abs_difference": differences}, indent=2))
    if differences and max(differences.values()) > 1e-4:
        raise SystemExit(f"Backends disagree: {differences}")
    return differences


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default="tiny",
                        help="named size with seeded random weights")
    parser.add_argument("--preset", metavar="DIR",
                        help="a checkpoint directory instead of --config")
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--sequence-length", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", default="runs/parity")
    parser.add_argument("--all-backends", action="store_true",
                        help="run under each backend in a subprocess")
    args = parser.parse_args()
    if not args.all_backends:
        run_one_backend(args)
        return
    for path in glob.glob(os.path.join(args.output, "*.npz")):
        os.remove(path)
    flags = [a for a in sys.argv[1:] if a != "--all-backends"]
    for backend in BACKENDS:
        subprocess.run([sys.executable, __file__, *flags], check=True,
                       env={**os.environ, "KERAS_BACKEND": backend})
    # The last backend compared all of them already; this process has not
    # imported Keras, so it only reads their arrays back.
    differences = compare(args.output)
    with open(os.path.join(args.output, "metrics.json"), "w") as file:
        json.dump({"max_abs_difference": differences}, file, indent=2)


if __name__ == "__main__":
    main()
