"""`keras-bert demo`: build a small BERT and run it on a sentence."""


def add_parser(subparsers):
    parser = subparsers.add_parser(
        "demo", help="build a tiny BERT and encode a sentence (no downloads)"
    )
    parser.add_argument("--config", default="tiny",
                        help="a size name: tiny, mini, small, medium, base")
    parser.add_argument("--text", default="BERT reads both directions.")
    parser.add_argument("--seed", type=int, default=0,
                        help="seeds the random weights (the same numbers "
                        "on every run of one backend)")
    parser.set_defaults(func=run)


def run(args):
    import keras
    import numpy as np

    from keras_bert import BertBackbone

    keras.utils.set_random_seed(args.seed)
    backbone = BertBackbone.from_preset(args.config)
    # Byte values stand in for WordPiece ids until a vocabulary is learned.
    ids = [2] + [5 + b for b in args.text.encode("utf-8")] + [3]
    inputs = {
        "token_ids": np.array([ids], "int32"),
        "segment_ids": np.zeros((1, len(ids)), "int32"),
        "padding_mask": np.ones((1, len(ids)), "int32"),
    }
    outputs = backbone(inputs)
    pooled = keras.ops.convert_to_numpy(outputs["pooled_output"])
    print(f"backend: {keras.config.backend()}")
    print(f"config: {args.config}, parameters: {backbone.count_params():,}"
          f" (random weights, seed {args.seed})")
    print(f"sequence_output: {tuple(outputs['sequence_output'].shape)}")
    print(f"pooled_output[:4]: {[round(float(v), 4) for v in pooled[0, :4]]}")
