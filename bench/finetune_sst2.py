"""SST-2 sentiment: keras_bert vs transformers, same recipe (see finetune_common).

Trains on a seeded subset of the GLUE SST-2 train split (shared/data
`sst2/train.tsv`) and scores accuracy on the 872-sentence GLUE dev set
(`sst2/test.tsv`). `--frozen 1` adds a keras_bert run with the backbone
frozen (`backbone.trainable = False`: a linear probe on the pooled output,
at `--probe-learning-rate`) to compare with full fine-tuning.

    KERAS_BACKEND=jax python bench/finetune_sst2.py --output /tmp/sst2.json
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


def load(args):
    from keras_bert.preprocessing.tasks import read_table

    train = read_table(f"{DATA}/sst2/train.tsv", ["sentence"], "label")
    dev = read_table(f"{DATA}/sst2/test.tsv", ["sentence"], "label")
    keep = subset(len(train["labels"]), args.train_size, args.seed)
    texts = [train["texts"][0][i] for i in keep]
    labels = np.array([int(train["labels"][i]) for i in keep])
    return texts, labels, dev["texts"][0], np.array(dev["labels"], int)


def run_keras(data, args, frozen=False):
    from keras_bert.metrics import classification_scores
    from keras_bert.models.bert_classifier import BertClassifier
    from keras_bert.preprocessing import BertPreprocessor

    texts, labels, dev_texts, dev_labels = data
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
    if frozen:
        model.backbone.trainable = False
        args = type(args)(**{**vars(args),
                             "learning_rate": args.probe_learning_rate})
    order = training_order(len(texts), args.epochs, args.seed)
    keras_compile_and_fit(model, texts, labels, order, args)
    logits = model.predict(dev_texts, batch_size=128, verbose=0)
    return classification_scores(dev_labels, np.argmax(logits, -1))


def run_transformers(data, args):
    import torch
    from transformers import BertForSequenceClassification

    from keras_bert.metrics import classification_scores

    texts, labels, dev_texts, dev_labels = data
    tokenizer = torch_tokenizer()
    model = torch_model(BertForSequenceClassification, args, num_labels=2,
                        classifier_dropout=args.dropout)
    torch_set_head(model.classifier,
                   *head_init(model.config.hidden_size, 2, args.seed))

    def encode(batch_texts):
        return dict(tokenizer(batch_texts, truncation=True,
                              max_length=args.max_length,
                              padding="max_length", return_tensors="pt"))

    features = encode(texts)
    features["labels"] = torch.tensor(labels)
    torch_train(model, features, training_order(len(texts), args.epochs,
                                                args.seed), args)
    outputs = torch_predict(model, encode(dev_texts), batch_size=128)
    logits = torch.cat([o.logits for o in outputs]).numpy()
    return classification_scores(dev_labels, np.argmax(logits, -1))


def main():
    args = parse_args(__doc__, train_size=1000, max_length=64, epochs=2,
                      extra={"frozen": 0, "probe_learning_rate": 1e-3})
    data = load(args)
    results = {}
    if "keras_bert" in args.libraries:
        results["keras_bert"] = timed(run_keras, data, args)
        if args.frozen:
            results["keras_bert_frozen"] = timed(run_keras, data, args, True)
    if "transformers" in args.libraries:
        results["transformers"] = timed(run_transformers, data, args)
    report("sst2", args, results)


if __name__ == "__main__":
    main()
