"""Extractive question answering on SQuAD v1.1 with exact match and F1.

    python examples/squad_qa.py ../shared/data/squad \
        --preset google-bert/bert-base-uncased --output runs/squad

Smoke run (random tiny model, 16 questions; any WordPiece `vocab.txt`,
e.g. the one the pretrain_mlm_nsp.py smoke run writes):

    python examples/squad_qa.py ../shared/data/squad --config tiny \
        --vocabulary runs/pretrain_smoke/vocab.txt --max-examples 16 \
        --epochs 1 --sequence-length 128 --output runs/squad_smoke

Data: SQuAD v1.1 (https://rajpurkar.github.io/SQuAD-explorer/):
`train-v1.1.json` and `dev-v1.1.json`. With `../shared/data/squad` the
training file is its 11-article subset. Long contexts are split into
overlapping windows (`--doc-stride`); the answer is the best span across
a question's windows, scored against all reference answers with the
official normalization. `--doc-stride` is capped at the room a window
leaves for context (`--sequence-length` minus `--max-query-length` minus
3 special tokens). With `--output`, the scores go to
`OUTPUT/metrics.json` and the training curves to `OUTPUT/curves.png`.
"""

import argparse

from example_utils import TrainingCurves
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
    parser.add_argument("--max-query-length", type=int, default=64)
    add_model_arguments(parser, epochs=2, learning_rate=3e-5,
                        sequence_length=384, batch_size=16)
    args = parser.parse_args()

    train = first(read_squad(data_file(
        args.data, "train-v1.1.json", "train-v1.1-first11articles.json")),
        args.max_examples)
    dev = first(read_squad(data_file(args.data, "dev-v1.1.json")),
                args.max_examples)

    backbone, tokenizer = load_backbone_and_tokenizer(args)
    # A stride longer than a window's context part would skip tokens.
    context_room = args.sequence_length - args.max_query_length - 3
    preprocessor = BertQuestionAnswererPreprocessor(
        tokenizer, sequence_length=args.sequence_length,
        doc_stride=min(args.doc_stride, context_room),
        max_query_length=args.max_query_length)
    model = BertQuestionAnswerer(backbone, preprocessor=preprocessor)
    windows = preprocessor.windows(
        [q["question"] for q in train], [q["context"] for q in train],
        answers=[(q["answers"][0]["answer_start"], q["answers"][0]["text"])
                 for q in train])
    print(f"{len(train)} questions -> {len(windows['labels'])} windows "
          f"({len(windows['skipped'])} questions without a usable answer)")
    steps = -(-len(windows["labels"]) // args.batch_size) * args.epochs
    model.compile(learning_rate=args.learning_rate, num_train_steps=steps)
    curves = TrainingCurves()
    model.fit(windows["inputs"], windows["labels"],
              batch_size=args.batch_size, epochs=args.epochs,
              callbacks=[curves])

    answers = model.answer([q["question"] for q in dev],
                           [q["context"] for q in dev],
                           batch_size=args.batch_size)
    scores = squad_scores(
        {q["id"]: a["text"] for q, a in zip(dev, answers)},
        {q["id"]: [r["text"] for r in q["answers"]] for q in dev},
    )
    write_metrics(args, {"questions": len(dev), **scores}, curves)


if __name__ == "__main__":
    main()
