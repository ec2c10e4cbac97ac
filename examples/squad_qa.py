"""Extractive question answering on SQuAD v1.1 with exact match and F1.

    python examples/squad_qa.py ../shared/data/squad \
        --preset path/to/bert-base-uncased --output runs/squad

Smoke run (random tiny model, 16 questions):

    python examples/squad_qa.py ../shared/data/squad --config tiny \
        --vocabulary path/to/vocab.txt --max-examples 16 --epochs 1 \
        --sequence-length 128

Data: SQuAD v1.1 (https://rajpurkar.github.io/SQuAD-explorer/):
`train-v1.1.json` and `dev-v1.1.json`. With `../shared/data/squad` the
training file is its 11-article subset. Long contexts are split into
overlapping windows (`--doc-stride`); the answer is the best span across
a question's windows, scored against all reference answers with the
official normalization.
"""

import argparse

from example_utils import add_model_arguments
from example_utils import data_file
from example_utils import first
from example_utils import load_backbone_and_tokenizer
from example_utils import write_metrics
from keras_bert.metrics import squad_scores
from keras_bert.models.bert_question_answerer import BertQuestionAnswerer
from keras_bert.preprocessing.tasks import BertQuestionAnswererPreprocessor
from keras_bert.preprocessing.tasks import read_squad


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data", help="folder with the SQuAD v1.1 JSON files")
    parser.add_argument("--doc-stride", type=int, default=128)
    add_model_arguments(parser, epochs=2, learning_rate=3e-5,
                        sequence_length=384, batch_size=16)
    args = parser.parse_args()

    train = first(read_squad(data_file(
        args.data, "train-v1.1.json", "train-v1.1-first11articles.json")),
        args.max_examples)
    dev = first(read_squad(data_file(args.data, "dev-v1.1.json")),
                args.max_examples)

    backbone, tokenizer = load_backbone_and_tokenizer(args)
    preprocessor = BertQuestionAnswererPreprocessor(
        tokenizer, sequence_length=args.sequence_length,
        doc_stride=min(args.doc_stride, args.sequence_length // 2))
    model = BertQuestionAnswerer(backbone, preprocessor=preprocessor)
    windows = preprocessor.windows(
        [q["question"] for q in train], [q["context"] for q in train],
        answers=[(q["answers"][0]["answer_start"], q["answers"][0]["text"])
                 for q in train])
    print(f"{len(train)} questions -> {len(windows['labels'])} windows "
          f"({len(windows['skipped'])} questions without a usable answer)")
    steps = -(-len(windows["labels"]) // args.batch_size) * args.epochs
    model.compile(learning_rate=args.learning_rate, num_train_steps=steps)
    model.fit(windows["inputs"], windows["labels"],
              batch_size=args.batch_size, epochs=args.epochs)

    answers = model.answer([q["question"] for q in dev],
                           [q["context"] for q in dev],
                           batch_size=args.batch_size)
    scores = squad_scores(
        {q["id"]: a["text"] for q, a in zip(dev, answers)},
        {q["id"]: [r["text"] for r in q["answers"]] for q in dev},
    )
    write_metrics(args, {"questions": len(dev), **scores})


if __name__ == "__main__":
    main()
