"""Fine-tune BERT on SST-2 (one sentence) or MRPC (sentence pairs).

    python examples/finetune_glue.py sst2 ../shared/data/sst2 \
        --preset google-bert/bert-base-uncased --output runs/sst2
    python examples/finetune_glue.py mrpc ../shared/data/mrpc \
        --preset google-bert/bert-base-uncased --output runs/mrpc

Smoke run (random tiny model, 32 examples; any WordPiece `vocab.txt`
will do, e.g. the one the pretrain_mlm_nsp.py smoke run writes):

    python examples/finetune_glue.py mrpc ../shared/data/mrpc --config tiny \
        --vocabulary runs/pretrain_smoke/vocab.txt --max-examples 32 \
        --epochs 1 --sequence-length 32 --output runs/mrpc_smoke

Data: the GLUE tasks (https://gluebenchmark.com/tasks). SST-2 is read from
`train.tsv` and `dev.tsv` (`sentence`, `label`); MRPC from `train.tsv` and
`dev.tsv` (`#1 String`, `#2 String`, `Quality`). With the folder of
`../shared/data`, SST-2's labelled evaluation file is `test.tsv` (the GLUE
dev set) and is used when present. Prints accuracy and F1; with
`--output`, writes them to `OUTPUT/metrics.json` and the training loss
and accuracy per step to `OUTPUT/curves.png`.
"""

import argparse

import numpy as np

from example_utils import TrainingCurves
from example_utils import add_model_arguments
from example_utils import data_file
from example_utils import first
from example_utils import load_backbone_and_tokenizer
from example_utils import write_metrics
from keras_bert.metrics import classification_scores
from keras_bert.models.bert_classifier import BertClassifier
from keras_bert.preprocessing import BertPreprocessor
from keras_bert.preprocessing.tasks import read_table

TASKS = {
    # name: (text columns, label column, evaluation files by preference)
    "sst2": (["sentence"], "label", ("test.tsv", "dev.tsv")),
    "mrpc": (["#1 String", "#2 String"], "Quality", ("dev.tsv",)),
}


def read_split(path, task, max_examples):
    columns, label, _ = TASKS[task]
    table = read_table(path, columns, label_column=label)
    texts = [first(column, max_examples) for column in table["texts"]]
    labels = np.array([int(y) for y in first(table["labels"], max_examples)])
    x = texts[0] if len(texts) == 1 else tuple(texts)
    return x, labels


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("task", choices=sorted(TASKS))
    parser.add_argument("data", help="folder with the task's TSV files")
    add_model_arguments(parser, epochs=3, learning_rate=2e-5)
    args = parser.parse_args()

    backbone, tokenizer = load_backbone_and_tokenizer(args)
    preprocessor = BertPreprocessor(
        tokenizer, sequence_length=args.sequence_length)
    model = BertClassifier(backbone, num_classes=2,
                           preprocessor=preprocessor)
    x_train, y_train = read_split(data_file(args.data, "train.tsv"),
                                  args.task, args.max_examples)
    x_eval, y_eval = read_split(data_file(args.data, *TASKS[args.task][2]),
                                args.task, args.max_examples)
    steps = -(-len(y_train) // args.batch_size) * args.epochs
    model.compile(learning_rate=args.learning_rate, num_train_steps=steps)
    curves = TrainingCurves()
    model.fit(x_train, y_train, batch_size=args.batch_size,
              epochs=args.epochs, callbacks=[curves])
    logits = model.predict(x_eval, batch_size=args.batch_size)
    scores = classification_scores(y_eval, np.argmax(logits, axis=-1))
    write_metrics(args, {"task": args.task, "examples": len(y_eval),
                         **scores}, curves)


if __name__ == "__main__":
    main()
