"""`keras-bert fill-mask`: the most likely tokens behind each [MASK].

    keras-bert fill-mask runs/pretrain/model "The [MASK] function returns a list."
    keras-bert fill-mask bert-base-uncased/ "Paris is the [MASK] of France." --top-k 3

MODEL is a preset written by `keras-bert pretrain` (its `model/` folder,
or the run directory that holds it),
`keras-bert convert` or `save_to_preset`, or a Hugging Face / Google
checkpoint directory with the masked-LM head (`BertForPreTraining`,
`BertForMaskedLM`) and a `vocab.txt`.
"""

import os


def add_parser(subparsers):
    parser = subparsers.add_parser(
        "fill-mask",
        help="predict the tokens behind [MASK] with a pretrained model",
        description="Print the top-k tokens, with probabilities, for each "
        "[MASK] in each text.",
    )
    parser.add_argument("model", metavar="MODEL",
                        help="preset or checkpoint directory with an MLM head "
                        "and a vocab.txt")
    parser.add_argument("texts", nargs="+", metavar="TEXT",
                        help='text with one or more [MASK], e.g. "the [MASK] sat"')
    parser.add_argument("--top-k", type=int, default=5, metavar="K",
                        help="candidates per mask (default 5)")
    parser.set_defaults(func=run)


def load_masked_lm(path):
    """The `BertPretrainer` and `BertTokenizer` stored in `path`.

    Raises a `ValueError` naming the directory when it has no vocabulary
    or holds a model without the masked-LM head (a bare backbone or a
    fine-tuned task), whose predictions would come from random weights.
    """
    from keras_bert.commands.model_argument import resolve_model

    if not os.path.isdir(path):
        path = resolve_model(path)

    from keras_bert import BertPretrainer
    from keras_bert.checkpoints import detect_layout
    from keras_bert.checkpoints.loading import read_bert_checkpoint
    from keras_bert.preprocessing import BertTokenizer

    if (not os.path.isfile(os.path.join(path, "config.json"))
            and os.path.isdir(os.path.join(path, "model"))):
        # A `keras-bert pretrain` run directory: its final preset.
        path = os.path.join(path, "model")
    if not any(os.path.isfile(os.path.join(path, name))
               for name in ("vocab.txt", "tokenizer.json")):
        raise ValueError(
            f"{path} has no vocab.txt (or tokenizer.json): fill-mask needs "
            "the vocabulary the model was trained with. Copy it into the "
            "directory."
        )
    if detect_layout(path) == "keras_bert":
        from keras_bert.checkpoints import load_preset_model

        model = load_preset_model(path)
        if not isinstance(model, BertPretrainer):
            raise ValueError(
                f"{path} holds a {type(model).__name__}, not a "
                "BertPretrainer: it has no masked-LM head to fill masks "
                "with. Use the `model/` preset of a pretraining run."
            )
    else:
        state = read_bert_checkpoint(path).state
        if not any(name.startswith("cls.predictions") for name in state):
            raise ValueError(
                f"{path} has no masked-LM head weights (cls.predictions.*): "
                "it is a bare encoder or a fine-tuned model. Use a "
                "checkpoint saved with its pretraining heads."
            )
        # No masked-LM preprocessor: fill-mask packs its texts itself, and
        # the preprocessor's masker is TensorFlow state.
        model = BertPretrainer.from_preset(path, preprocessor=None)
    # The stored model's tokenizer, else the directory's.
    tokenizer = getattr(model.preprocessor, "tokenizer", None)
    return model, tokenizer or BertTokenizer.from_preset(path)


def format_predictions(text, predictions):
    """One text's predictions as printable lines, one row per candidate."""
    lines = [text]
    for index, candidates in enumerate(predictions, start=1):
        label = "[MASK]" if len(predictions) == 1 else f"[MASK] {index}"
        for rank, (token, probability) in enumerate(candidates, start=1):
            lines.append(f"  {label if rank == 1 else '':<10}{rank:>2}. "
                         f"{token:<16}{probability:.4f}")
    return "\n".join(lines)


def run(args):
    if args.top_k < 1:
        raise SystemExit("error: --top-k must be at least 1")
    model, tokenizer = load_masked_lm(args.model)

    from keras_bert.training.fill_mask import fill_mask

    top_k = min(args.top_k, tokenizer.vocabulary_size())
    for number, text in enumerate(args.texts):
        predictions = fill_mask(model, tokenizer, text, top_k=top_k)
        if number:
            print()
        print(format_predictions(text, predictions))
    return 0
