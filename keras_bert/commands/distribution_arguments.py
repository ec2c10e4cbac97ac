"""The command-line flags of a distributed run.

`keras-bert pretrain` and `finetune` add them to their parsers (importing
no Keras, so `--help` answers without loading a backend), and
`distribution_from_args` turns the parsed flags into an engine.
"""

import argparse

from keras_bert.training.distribution_kinds import KINDS


def parse_mesh_shape(text):
    """argparse type for `--mesh-shape`: "8" -> (8,), "2,4" -> (2, 4)."""
    try:
        shape = tuple(int(part) for part in text.split(","))
    except ValueError:
        shape = ()
    if not shape or len(shape) > 2 or min(shape) < 1:
        raise argparse.ArgumentTypeError(
            f"--mesh-shape {text!r}: expected DATA or DATA,MODEL positive "
            "integers, e.g. 8 or 2,4."
        )
    return shape


def add_distribution_arguments(parser):
    """Adds --distribution, --mesh-shape, --multi-host and --tpu to a parser."""
    group = parser.add_argument_group(
        "distribution", "Train over several devices or hosts "
        "(docs/distributed.md)."
    )
    group.add_argument(
        "--distribution", choices=KINDS, default=None,
        help="data_parallel: replicate the model, split the batch (JAX, "
        "TensorFlow). model_parallel: also split the weights over the "
        "mesh's model axis (JAX). Default: one device.",
    )
    group.add_argument(
        "--mesh-shape", type=parse_mesh_shape, default=None,
        metavar="DATA[,MODEL]",
        help="Devices along the data and model axes, e.g. 2,4 on 8 devices. "
        "Default: all devices on the data axis (data_parallel) or on the "
        "model axis (model_parallel).",
    )
    group.add_argument(
        "--multi-host", action="store_true",
        help="JAX: join a multi-process cluster (jax.distributed; detects "
        "TPU pods and SLURM, or reads KERAS_DISTRIBUTION_JOB_ADDRESSES, "
        "KERAS_DISTRIBUTION_NUM_PROCESSES, KERAS_DISTRIBUTION_PROCESS_ID). "
        "TensorFlow reads TF_CONFIG instead.",
    )
    group.add_argument(
        "--tpu", default=None,
        help="TensorFlow: TPU name or address ('local' on a TPU VM).",
    )
    return parser


def distribution_from_args(args):
    """The engine for parsed `add_distribution_arguments` flags (or None)."""
    from keras_bert.training.distribution import configure_distribution

    return configure_distribution(
        kind=args.distribution,
        mesh_shape=args.mesh_shape,
        multi_host=True if args.multi_host else None,
        tpu=args.tpu,
    )
