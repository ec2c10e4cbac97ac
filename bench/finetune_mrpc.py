"""MRPC paraphrase (sentence pairs): keras_bert vs transformers, same recipe.

Trains on a seeded subset of the GLUE MRPC train split (shared/data
`mrpc/train.tsv`); scores accuracy and F1 (paraphrase class) on the GLUE
dev set (408 pairs, `mrpc/dev.tsv`) and on the labelled MSRP test set
(1,725 pairs, `mrpc/msr_paraphrase_test.txt`), which is steadier. Pairs
are packed `[CLS] A [SEP] B [SEP]`, longest-first truncation.

    KERAS_BACKEND=jax python bench/finetune_mrpc.py --output /tmp/mrpc.json
"""

import numpy as np

from finetune_common import DATA
from finetune_common import head_init
from finetune_common import keras_backbone
from finetune_common import keras_compile_and_fit
from finetune_common import keras_tokenizer
from finetune_common import parse_args
from finetune_common import report
from finetune_common import subset
from finetune_common import timed
from finetune_common import torch_model
from finetune_common import torch_predict
from finetune_common import torch_set_head
from finetune_common import torch_tokenizer
from finetune_common import torch_train
from finetune_common import training_order

COLUMNS = ["#1 String", "#2 String"]


def load(args):
    from keras_bert.preprocessing.tasks import read_table

    def pairs(name, keep=None):
        table = read_table(f"{DATA}/mrpc/{name}", COLUMNS, "Quality")
        keep = range(len(table["labels"])) if keep is None else keep(
            len(table["labels"]))
        first, second = table["texts"]
        return ([first[i] for i in keep], [second[i] for i in keep],
                np.array([int(table["labels"][i]) for i in keep]))

    train = pairs("train.tsv", lambda n: subset(n, args.train_size, args.seed))
    return train, {"dev": pairs("dev.tsv"),
                   "test": pairs("msr_paraphrase_test.txt")}


def scores(evaluate, splits):
    from keras_bert.metrics import classification_scores

    result = {}
    for name, (first, second, labels) in splits.items():
        split_scores = classification_scores(labels, evaluate(first, second))
        result.update({f"{name}_{k}": v for k, v in split_scores.items()})
    return result


def run_keras(data, args):
    from keras_bert.models.bert_classifier import BertClassifier
    from keras_bert.preprocessing import BertPreprocessor

    (first, second, labels), splits = data
    model = BertClassifier(
        keras_backbone(args),
        num_classes=2,
        dropout=args.dropout,
        preprocessor=BertPreprocessor(keras_tokenizer(),
                                      sequence_length=args.max_length),
    )
    model.classifier_head.set_weights(
        head_init(model.backbone.hidden_dim, 2, args.seed)
    )
    order = training_order(len(labels), args.epochs, args.seed)
    keras_compile_and_fit(model, (first, second), labels, order, args)
    return scores(
        lambda a, b: np.argmax(
            model.predict((a, b), batch_size=128, verbose=0), -1),
        splits,
    )


def run_transformers(data, args):
    import torch
    from transformers import BertForSequenceClassification

    (first, second, labels), splits = data
    tokenizer = torch_tokenizer()
    model = torch_model(BertForSequenceClassification, args, num_labels=2,
                        classifier_dropout=args.dropout)
    torch_set_head(model.classifier,
                   *head_init(model.config.hidden_size, 2, args.seed))

    def encode(a, b):
        return dict(tokenizer(a, b, truncation="longest_first",
                              max_length=args.max_length,
                              padding="max_length", return_tensors="pt"))

    features = encode(first, second)
    features["labels"] = torch.tensor(labels)
    torch_train(model, features, training_order(len(labels), args.epochs,
                                                args.seed), args)

    def evaluate(a, b):
        outputs = torch_predict(model, encode(a, b), batch_size=128)
        return np.argmax(torch.cat([o.logits for o in outputs]).numpy(), -1)

    return scores(evaluate, splits)


def main():
    args = parse_args(__doc__, train_size=1000, max_length=96, epochs=2)
    data = load(args)
    results = {}
    if "keras_bert" in args.libraries:
        results["keras_bert"] = timed(run_keras, data, args)
    if "transformers" in args.libraries:
        results["transformers"] = timed(run_transformers, data, args)
    report("mrpc", args, results)


if __name__ == "__main__":
    main()
