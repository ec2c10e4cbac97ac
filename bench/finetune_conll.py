"""CoNLL-2003 NER: keras_bert vs transformers, same recipe (see finetune_common).

Trains on a seeded subset of the English training sentences (IOB2 copy,
shared/data `conll2003/bio/train.txt`) and scores entity-level F1 (exact
span and type, `keras_bert.metrics.entity_scores`) on the validation
sentences (`bio/valid.txt`, 3,250 sentences, or `--eval-size`). Each word
is labelled on its first WordPiece; words cut off by `--max-length` count
as "O".

    KERAS_BACKEND=jax python bench/finetune_conll.py --output /tmp/conll.json
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
    from keras_bert.preprocessing.tasks import read_conll

    train = read_conll(f"{DATA}/conll2003/bio/train.txt")
    valid = read_conll(f"{DATA}/conll2003/bio/valid.txt")
    # "O" first: label 0 is what words without a prediction get.
    names = ["O"] + sorted({t for s in train["tags"] for t in s} - {"O"})
    keep = subset(len(train["words"]), args.train_size, args.seed)
    words = [train["words"][i] for i in keep]
    labels = [[names.index(t) for t in train["tags"][i]] for i in keep]
    count = args.eval_size or len(valid["words"])
    return names, words, labels, valid["words"][:count], valid["tags"][:count]


def run_keras(data, args):
    from keras_bert.metrics import entity_scores
    from keras_bert.models.bert_token_classifier import BertTokenClassifier
    from keras_bert.preprocessing.tasks import BertTokenClassifierPreprocessor

    names, words, labels, eval_words, eval_tags = data
    model = BertTokenClassifier(
        keras_backbone(args),
        num_classes=len(names),
        dropout=args.dropout,
        preprocessor=BertTokenClassifierPreprocessor(
            keras_tokenizer(), sequence_length=args.max_length
        ),
    )
    model.token_classifier_head.set_weights(
        head_init(model.backbone.hidden_dim, len(names), args.seed)
    )
    order = training_order(len(words), args.epochs, args.seed)
    keras_compile_and_fit(model, words, labels, order, args)
    predicted = model.predict_words(eval_words, batch_size=128, verbose=0)
    return entity_scores(eval_tags, [[names[i] for i in s] for s in predicted])


def run_transformers(data, args):
    import torch
    from transformers import BertForTokenClassification

    from keras_bert.metrics import entity_scores

    names, words, labels, eval_words, eval_tags = data
    tokenizer = torch_tokenizer()
    model = torch_model(BertForTokenClassification, args,
                        num_labels=len(names), classifier_dropout=args.dropout)
    torch_set_head(model.classifier,
                   *head_init(model.config.hidden_size, len(names), args.seed))

    def encode(sentences):
        return tokenizer(sentences, is_split_into_words=True, truncation=True,
                         max_length=args.max_length, padding="max_length",
                         return_tensors="pt")

    def first_pieces(encoding, index):
        """word -> position of its first piece (word_ids from the tokenizer)."""
        positions = {}
        for position, word in enumerate(encoding.word_ids(index)):
            if word is not None and word not in positions:
                positions[word] = position
        return positions

    encoding = encode(words)
    token_labels = np.full(encoding["input_ids"].shape, -100)
    for i, sentence_labels in enumerate(labels):
        for word, position in first_pieces(encoding, i).items():
            token_labels[i, position] = sentence_labels[word]
    features = dict(encoding)
    features["labels"] = torch.tensor(token_labels)
    torch_train(model, features, training_order(len(words), args.epochs,
                                                args.seed), args)

    encoding = encode(eval_words)
    outputs = torch_predict(model, dict(encoding), batch_size=128)
    token_predictions = np.argmax(
        torch.cat([o.logits for o in outputs]).numpy(), -1)
    predicted = []
    for i, sentence in enumerate(eval_words):
        positions = first_pieces(encoding, i)
        predicted.append([
            names[token_predictions[i, positions[w]]] if w in positions else "O"
            for w in range(len(sentence))
        ])
    return entity_scores(eval_tags, predicted)


def main():
    args = parse_args(__doc__, train_size=1000, max_length=64, epochs=2)
    data = load(args)
    results = {}
    for library, run in (("keras_bert", run_keras),
                         ("transformers", run_transformers)):
        if library in args.libraries:
            results[library] = timed(run, data, args)
            results[library].pop("per_type")
    report("conll2003", args, results)


if __name__ == "__main__":
    main()
