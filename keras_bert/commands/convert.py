"""`keras-bert convert`: checkpoint directories between layouts.

    keras-bert convert uncased_L-12_H-768_A-12/ bert_base_preset/
    keras-bert convert bert_base_preset/ bert_base_hf/

A Hugging Face or Google directory becomes a keras_bert preset; a
keras_bert preset becomes a Hugging Face directory (`--to` overrides).
Checkpoints with MLM weights are converted as a `BertPretrainer`, keeping
the MLM and NSP heads, unless `--model backbone`. After writing, the output
is reloaded and compared with the converted model on random token ids.
"""

import os


def add_parser(subparsers):
    parser = subparsers.add_parser(
        "convert",
        help="convert a HF / Google BERT checkpoint to a keras_bert preset, "
        "or a preset to a HF directory",
    )
    parser.add_argument("source", help="checkpoint directory (any layout)")
    parser.add_argument("output", help="directory to write (replaced)")
    parser.add_argument(
        "--to", choices=("keras_bert", "huggingface"), default=None,
        help="output layout (default: keras_bert, or huggingface for a "
        "keras_bert source)",
    )
    parser.add_argument(
        "--model", choices=("auto", "backbone", "pretrainer"), default="auto",
        help="what to convert from a HF / Google source (auto: pretrainer "
        "when the checkpoint has MLM weights)",
    )
    parser.add_argument("--allow-pickle", action="store_true",
                        help="permit PyTorch .bin weights (trusted files only)")
    parser.add_argument("--no-strict", dest="strict", action="store_false",
                        help="load matching weights, report the rest")
    parser.add_argument("--no-verify", dest="verify", action="store_false",
                        help="skip reloading the output to compare outputs")
    parser.set_defaults(func=run)


def _load_source(args, layout):
    from keras_bert import BertBackbone
    from keras_bert import BertPretrainer
    from keras_bert import checkpoints
    from keras_bert.checkpoints.loading import read_bert_checkpoint

    if layout == "keras_bert":
        return checkpoints.load_preset_model(args.source)
    kind = args.model
    if kind == "auto":
        # A second read; safetensors are memory-mapped, so this is cheap.
        state = read_bert_checkpoint(
            args.source, allow_pickle=args.allow_pickle
        ).state
        kind = ("pretrainer" if "cls.predictions.bias" in state
                else "backbone")
    options = {"allow_pickle": args.allow_pickle, "strict": args.strict}
    if kind == "pretrainer":
        return BertPretrainer.from_preset(args.source, preprocessor=None,
                                          **options)
    return BertBackbone.from_preset(args.source, **options)


def _source_tokenizer(source):
    if not any(
        os.path.isfile(os.path.join(source, name))
        for name in ("vocab.txt", "tokenizer.json")
    ):
        return None
    from keras_bert.preprocessing import BertTokenizer

    return BertTokenizer.from_preset(source)


def _max_abs_difference(model, output):
    import numpy as np
    from keras import ops

    from keras_bert import BertBackbone

    backbone = getattr(model, "backbone", model)
    reloaded = BertBackbone.from_preset(output)
    rng = np.random.default_rng(0)
    length = min(16, backbone.max_sequence_length)
    inputs = {
        "token_ids": rng.integers(0, backbone.vocabulary_size, (2, length)),
        "segment_ids": np.zeros((2, length), "int32"),
        "padding_mask": np.ones((2, length), "int32"),
    }
    expected = ops.convert_to_numpy(backbone(inputs)["sequence_output"])
    actual = ops.convert_to_numpy(reloaded(inputs)["sequence_output"])
    return float(np.max(np.abs(expected - actual)))


def run(args):
    from keras_bert import checkpoints

    layout = checkpoints.detect_layout(args.source)
    target = args.to or (
        "huggingface" if layout == "keras_bert" else "keras_bert"
    )
    model = _load_source(args, layout)
    tokenizer = _source_tokenizer(args.source)
    if target == "huggingface":
        checkpoints.export_to_huggingface(model, args.output,
                                          tokenizer=tokenizer)
    else:
        checkpoints.save_to_preset(model, args.output, tokenizer=tokenizer)
    print(f"{args.source} ({layout}) -> {args.output} ({target})")
    print(f"model: {type(model).__name__}, "
          f"parameters: {model.count_params():,}")
    if tokenizer is None:
        print("note: no vocab.txt in the source; no tokenizer was written")
    print("files: " + ", ".join(sorted(os.listdir(args.output))))
    if args.verify:
        difference = _max_abs_difference(model, args.output)
        print(f"verify: sequence_output max-abs difference after reload: "
              f"{difference:.2e}")
        if difference > 1e-5:
            print("error: the written checkpoint does not reproduce the "
                  "model's outputs")
            return 1
    return 0
