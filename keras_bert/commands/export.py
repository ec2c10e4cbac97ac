"""`keras-bert export`: a model directory to a TF SavedModel or ONNX file.

    keras-bert export runs/sst2/best exported/sst2/1 --format savedmodel
    keras-bert export runs/sst2/best sst2.onnx --format onnx --overwrite

MODEL_DIR is a keras_bert preset (a backbone or a fine-tuned task), a
Hugging Face / Google checkpoint directory, or a pretrained model's name
(`dslim/bert-base-NER`, `bert_base_en_uncased`); a fine-tuned Hugging
Face checkpoint is exported as its task (with its labels), any other as
a backbone. A
`BertPretrainer` (the `model/` of `keras-bert pretrain`) is exported as
its backbone: serving takes text or token ids and returns embeddings.
The SavedModel takes strings when the directory has a `vocab.txt`
(`serving_default`) and packed ids either way (`serving_packed`); the
ONNX file takes packed ids. See docs/export.md.
"""

import os

FORMATS = ("savedmodel", "onnx")


def add_parser(subparsers):
    parser = subparsers.add_parser(
        "export",
        help="export a model directory to a TF SavedModel or an ONNX file",
        description="Export a keras_bert preset or checkpoint directory for "
        "serving: a TensorFlow SavedModel (strings in) or ONNX (packed ids).",
    )
    parser.add_argument("model_dir", metavar="MODEL_DIR",
                        help="keras_bert preset, HF / Google checkpoint, or "
                        "a model's name")
    parser.add_argument("output", metavar="OUTPUT",
                        help="SavedModel directory, or .onnx file")
    parser.add_argument("--format", choices=FORMATS, required=True)
    parser.add_argument("--overwrite", action="store_true",
                        help="replace an existing export at OUTPUT")
    parser.add_argument("--sequence-length", type=int, metavar="N",
                        help="longest packed input of the string signature "
                        "(default: the preprocessor's, else the model's)")
    parser.add_argument("--text-inputs", metavar="NAMES",
                        help="comma-separated string input names, e.g. "
                        "premise,hypothesis (default: text)")
    parser.add_argument("--label-names", metavar="NAMES",
                        help="comma-separated class or tag names: adds a "
                        "string labels/tags output (default: the names in "
                        "MODEL_DIR/finetune.json, when keras-bert finetune "
                        "wrote it)")
    parser.add_argument("--packed-only", action="store_true",
                        help="SavedModel without the string signature")
    parser.add_argument("--opset", type=int, help="ONNX opset (default: "
                        "the converter's)")
    parser.set_defaults(func=run)


def load_exportable(path):
    """The exportable model in `path` and its tokenizer (or None).

    A `BertPretrainer` is replaced by its backbone, the part that serves.
    """
    from keras_bert import BertBackbone
    from keras_bert import BertPretrainer
    from keras_bert import checkpoints
    from keras_bert.commands.model_argument import huggingface_task
    from keras_bert.tasks.registry import load_class

    fine_tuned = huggingface_task(path)
    if checkpoints.detect_layout(path) == "keras_bert":
        model = checkpoints.load_preset_model(path)
    elif fine_tuned is not None:
        model = load_class(fine_tuned[1].model_class).from_preset(path)
    else:
        model = BertBackbone.from_preset(path)
    if isinstance(model, BertPretrainer):
        print(f"{path} holds a BertPretrainer; exporting its backbone.")
        model = model.backbone
    tokenizer = None
    if any(os.path.isfile(os.path.join(path, name))
           for name in ("vocab.txt", "tokenizer.json")):
        from keras_bert.preprocessing import BertTokenizer

        tokenizer = BertTokenizer.from_preset(path)
    return model, tokenizer


def _names(text):
    return [name.strip() for name in text.split(",") if name.strip()] if text else None


def run(args):
    from keras_bert.commands.model_argument import resolve_model

    model_dir = resolve_model(args.model_dir)

    from keras_bert.commands.predict import read_task_info
    from keras_bert.export import export_onnx
    from keras_bert.export import export_saved_model

    model, tokenizer = load_exportable(model_dir)
    label_names = (_names(args.label_names)
                   or (read_task_info(model_dir) or {}).get("labels"))
    if args.format == "onnx":
        export_onnx(model, args.output, overwrite=args.overwrite,
                    label_names=label_names, opset=args.opset)
        return 0
    strings = not args.packed_only
    if strings and tokenizer is None and getattr(
            model, "preprocessor", None) is None:
        raise ValueError(
            f"{args.model_dir} has no vocab.txt, so the SavedModel cannot "
            "take strings. Add the vocabulary, or pass --packed-only."
        )
    text_inputs = _names(args.text_inputs)
    export_saved_model(
        model, args.output, include_preprocessing=strings,
        overwrite=args.overwrite,
        preprocessor=None if getattr(model, "preprocessor", None)
        else tokenizer,
        text_inputs=tuple(text_inputs) if text_inputs else None,
        sequence_length=args.sequence_length, label_names=label_names,
    )
    return 0
