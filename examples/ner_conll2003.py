"""Named-entity recognition on CoNLL-2003 with entity-level F1.

    python examples/ner_conll2003.py ../shared/data/conll2003/bio \
        --preset google-bert/bert-base-cased --output runs/ner

Smoke run (random tiny model, 32 sentences; any WordPiece `vocab.txt`,
e.g. the one the pretrain_mlm_nsp.py smoke run writes):

    python examples/ner_conll2003.py ../shared/data/conll2003/bio \
        --config tiny --vocabulary runs/pretrain_smoke/vocab.txt \
        --max-examples 32 --epochs 1 --sequence-length 32 \
        --output runs/ner_smoke

Data: CoNLL-2003 English (https://www.clips.uantwerpen.be/conll2003/ner/)
as `train.txt` and `valid.txt` (or `test.txt`) in column format, the tag
in the last column (IOB1 or IOB2). Each word's tag is predicted from its
first WordPiece; scores are entity-level precision/recall/F1 (conlleval).
A cased checkpoint is the usual choice for NER. With `--output`, the
scores go to `OUTPUT/metrics.json` and the training curves to
`OUTPUT/curves.png`.
"""

import argparse

import numpy as np

from example_utils import TrainingCurves
from example_utils import add_model_arguments
from example_utils import data_file
from example_utils import first
from example_utils import load_backbone_and_tokenizer
from example_utils import write_metrics
from keras_bert.metrics import entity_scores
from keras_bert.models.bert_token_classifier import BertTokenClassifier
from keras_bert.preprocessing.tasks import BertTokenClassifierPreprocessor
from keras_bert.preprocessing.tasks import read_conll


def read_split(path, max_examples):
    data = read_conll(path)
    return first(data["words"], max_examples), first(data["tags"], max_examples)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data", help="folder with train.txt and valid.txt")
    add_model_arguments(parser, epochs=3, learning_rate=5e-5)
    args = parser.parse_args()

    words, tags = read_split(data_file(args.data, "train.txt"),
                             args.max_examples)
    eval_words, eval_tags = read_split(
        data_file(args.data, "valid.txt", "test.txt"), args.max_examples)
    # Tag ids from the training tags; "O" first so it is id 0.
    names = ["O"] + sorted({t for s in tags for t in s} - {"O"})
    ids = {name: index for index, name in enumerate(names)}

    backbone, tokenizer = load_backbone_and_tokenizer(args)
    preprocessor = BertTokenClassifierPreprocessor(
        tokenizer, sequence_length=args.sequence_length)
    model = BertTokenClassifier(backbone, num_classes=len(names),
                                preprocessor=preprocessor)
    steps = -(-len(words) // args.batch_size) * args.epochs
    model.compile(learning_rate=args.learning_rate, num_train_steps=steps)
    curves = TrainingCurves()
    model.fit(words, [[ids[t] for t in s] for s in tags],
              batch_size=args.batch_size, epochs=args.epochs,
              callbacks=[curves])

    logits = model.predict(eval_words, batch_size=args.batch_size)
    predicted = np.argmax(logits, axis=-1)
    positions = preprocessor.first_token_positions(eval_words)
    # A word cut off by the sequence length (position -1) is predicted "O".
    predictions = [
        [names[row[p]] if p >= 0 else "O" for p in sentence_positions]
        for row, sentence_positions in zip(predicted, positions)
    ]
    scores = entity_scores(eval_tags, predictions)
    write_metrics(args, {"sentences": len(eval_words), **scores}, curves)


if __name__ == "__main__":
    main()
