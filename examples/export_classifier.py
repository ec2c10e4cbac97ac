"""Export a sentence classifier as a strings-in SavedModel and query it.

    python examples/export_classifier.py ../shared/data/sst2 runs/export \
        --preset google-bert/bert-base-uncased --max-examples 2000 --epochs 1

Smoke run (random tiny model, 32 examples; any WordPiece `vocab.txt`,
e.g. the one the pretrain_mlm_nsp.py smoke run writes):

    python examples/export_classifier.py ../shared/data/sst2 \
        runs/export_smoke --config tiny \
        --vocabulary runs/pretrain_smoke/vocab.txt --max-examples 32 \
        --epochs 1 --sequence-length 32

Fine-tunes a `BertClassifier` on SST-2's `train.tsv` (see
`finetune_glue.py` for the full recipe), exports it with its tokenizer as
one TensorFlow graph (`EXPORT_DIR/1`, the layout TF Serving expects), then
loads the SavedModel with plain TensorFlow, as a serving process would,
and sends it raw sentences. Works under every backend: under JAX or
PyTorch the export runs in a TensorFlow subprocess. The served answers
go to `metrics.json` and the training curves to `curves.png`, both in
`--output` (by default `EXPORT_DIR`, beside `1/`).
"""

import argparse
import os

import numpy as np

from example_utils import TrainingCurves
from example_utils import add_model_arguments
from example_utils import data_file
from example_utils import first
from example_utils import load_backbone_and_tokenizer
from example_utils import write_metrics
from keras_bert.export import export_saved_model
from keras_bert.models.bert_classifier import BertClassifier
from keras_bert.preprocessing import BertPreprocessor
from keras_bert.preprocessing.tasks import read_table

QUERIES = ["a gripping , beautifully acted film", "a dull , tedious mess"]


def query_saved_model(path, sentences):
    """What a serving process does: TensorFlow only, no keras_bert."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the tokenizer ops)

    serve = tf.saved_model.load(path).signatures["serving_default"]
    outputs = serve(text=tf.constant(sentences))
    return {name: value.numpy() for name, value in outputs.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data", help="SST-2 folder with train.tsv")
    parser.add_argument("export_dir", help="where to write the SavedModel")
    add_model_arguments(parser, epochs=1, learning_rate=2e-5)
    args = parser.parse_args()
    args.output = args.output or args.export_dir

    table = read_table(data_file(args.data, "train.tsv"), ["sentence"],
                       label_column="label")
    sentences = first(table["texts"][0], args.max_examples)
    labels = np.array([int(y) for y in first(table["labels"],
                                             args.max_examples)])
    backbone, tokenizer = load_backbone_and_tokenizer(args)
    preprocessor = BertPreprocessor(tokenizer,
                                    sequence_length=args.sequence_length)
    model = BertClassifier(backbone, num_classes=2, preprocessor=preprocessor)
    model.compile(learning_rate=args.learning_rate,
                  num_train_steps=-(-len(labels) // args.batch_size)
                  * args.epochs)
    curves = TrainingCurves()
    model.fit(sentences, labels, batch_size=args.batch_size,
              epochs=args.epochs, callbacks=[curves])

    path = os.path.join(args.export_dir, "1")
    export_saved_model(model, path, overwrite=True,
                       label_names=["negative", "positive"])
    served = query_saved_model(path, QUERIES)
    # The served graph must agree with the Keras model it came from.
    keras_probabilities = model.predict(QUERIES)
    keras_probabilities = np.exp(keras_probabilities) / np.exp(
        keras_probabilities).sum(-1, keepdims=True)
    difference = float(np.abs(served["probabilities"]
                              - keras_probabilities).max())
    write_metrics(args, {
        "saved_model": path,
        "answers": {text: label.decode() for text, label in
                    zip(QUERIES, served["labels"])},
        "max_abs_difference_vs_keras": difference,
    }, curves)
    if difference > 1e-4:
        raise SystemExit(f"The SavedModel disagrees with Keras: {difference}")


if __name__ == "__main__":
    main()
