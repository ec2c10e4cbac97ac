"""SQuAD v1.1 extractive QA: keras_bert vs transformers, same recipe.

Trains on a seeded subset of the 3,807 training questions in shared/data
(`squad/train-v1.1-first11articles.json`) and scores the official
SQuAD v1.1 exact match and F1 on the first `--eval-size` questions of the
dev set (`squad/dev-v1.1.json`). Windows: `--max-length` tokens,
consecutive windows `--doc-stride` tokens apart, questions cut to 64
pieces; windows without the answer are labelled at [CLS], questions whose
answer is in no window are left out of training (both sides). Answers:
20-best starts and ends per window, at most 30 tokens, best over windows,
text cut from the context by character offsets (shared post-processing).

    KERAS_BACKEND=jax python bench/finetune_squad.py --output /tmp/squad.json
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

MAX_QUERY_LENGTH = 64


def load(args):
    from keras_bert.preprocessing.tasks import read_squad

    train = read_squad(f"{DATA}/squad/train-v1.1-first11articles.json")
    train = [train[i] for i in subset(len(train), args.train_size, args.seed)]
    dev = read_squad(f"{DATA}/squad/dev-v1.1.json")[: args.eval_size]
    return train, dev


def scores(dev, answers):
    from keras_bert.metrics import squad_scores

    return squad_scores(
        {example["id"]: answer["text"] for example, answer in zip(dev, answers)},
        {example["id"]: [a["text"] for a in example["answers"]]
         for example in dev},
    )


def columns(examples):
    return ([e["question"] for e in examples], [e["context"] for e in examples])


def run_keras(data, args):
    from keras_bert.models.bert_question_answerer import BertQuestionAnswerer
    from keras_bert.preprocessing.tasks import BertQuestionAnswererPreprocessor

    train, dev = data
    preprocessor = BertQuestionAnswererPreprocessor(
        keras_tokenizer(), sequence_length=args.max_length,
        doc_stride=args.doc_stride, max_query_length=MAX_QUERY_LENGTH,
    )
    model = BertQuestionAnswerer(keras_backbone(args), preprocessor=preprocessor)
    model.qa_head.set_weights(head_init(model.backbone.hidden_dim, 2, args.seed))
    windows = preprocessor.windows(
        *columns(train),
        answers=[(e["answers"][0]["answer_start"], e["answers"][0]["text"])
                 for e in train],
    )
    print(f"  keras_bert: {len(windows['labels'])} training windows, "
          f"{len(windows['skipped'])} questions skipped", flush=True)
    order = training_order(len(windows["labels"]), args.epochs, args.seed)
    keras_compile_and_fit(model, windows["inputs"], windows["labels"], order,
                          args)
    answers = model.answer(*columns(dev), batch_size=64, verbose=0)
    return scores(dev, answers)


def hf_windows(tokenizer, examples, args, with_labels):
    """The reference windows: `transformers` overflow with offsets.

    Hugging Face's `stride` is the overlap; the overlap that puts window
    starts `doc_stride` tokens apart is `room - doc_stride`.
    """
    rows = {"input_ids": [], "token_type_ids": [], "attention_mask": [],
            "offsets": [], "example_index": [], "start_positions": [],
            "end_positions": []}
    skipped = 0
    for index, example in enumerate(examples):
        # (No SQuAD question here reaches MAX_QUERY_LENGTH pieces, so the
        # question is not cut on this side.)
        question = example["question"]
        question_length = len(tokenizer(question, add_special_tokens=False)
                              ["input_ids"])
        room = args.max_length - question_length - 3
        encoding = tokenizer(
            question, example["context"], truncation="only_second",
            max_length=args.max_length, stride=room - args.doc_stride,
            return_overflowing_tokens=True, return_offsets_mapping=True,
            padding="max_length",
        )
        answer = example["answers"][0]
        start_char = answer["answer_start"]
        end_char = start_char + len(answer["text"])
        example_rows = []
        for window in range(len(encoding["input_ids"])):
            in_context = np.array(encoding.sequence_ids(window)) == 1
            offsets = np.array(encoding["offset_mapping"][window])
            offsets[~in_context] = -1
            positions = np.flatnonzero(in_context)
            start = end = 0
            if (offsets[positions[0], 0] <= start_char
                    and offsets[positions[-1], 1] >= end_char):
                start = positions[offsets[positions, 0] <= start_char][-1]
                end = max(start, positions[offsets[positions, 1] >= end_char][0])
            example_rows.append((window, offsets, start, end))
        if with_labels and all(row[2] == 0 for row in example_rows):
            skipped += 1
            continue
        for window, offsets, start, end in example_rows:
            for key in ("input_ids", "token_type_ids", "attention_mask"):
                rows[key].append(encoding[key][window])
            rows["offsets"].append(offsets)
            rows["example_index"].append(index)
            rows["start_positions"].append(start)
            rows["end_positions"].append(end)
    return {k: np.array(v) for k, v in rows.items()}, skipped


def run_transformers(data, args):
    import torch
    from transformers import BertForQuestionAnswering

    from keras_bert.preprocessing.tasks import best_answer_spans

    train, dev = data
    tokenizer = torch_tokenizer()
    model = torch_model(BertForQuestionAnswering, args)
    torch_set_head(model.qa_outputs,
                   *head_init(model.config.hidden_size, 2, args.seed))
    windows, skipped = hf_windows(tokenizer, train, args, with_labels=True)
    print(f"  transformers: {len(windows['input_ids'])} training windows, "
          f"{skipped} questions skipped", flush=True)
    inputs = ("input_ids", "token_type_ids", "attention_mask")
    features = {k: torch.tensor(windows[k]) for k in inputs + (
        "start_positions", "end_positions")}
    torch_train(model, features, training_order(len(windows["input_ids"]),
                                                args.epochs, args.seed), args)
    windows, _ = hf_windows(tokenizer, dev, args, with_labels=False)
    outputs = torch_predict(model, {k: torch.tensor(windows[k]) for k in inputs},
                            batch_size=64)
    logits = np.stack([torch.cat([o.start_logits for o in outputs]).numpy(),
                       torch.cat([o.end_logits for o in outputs]).numpy()], -1)
    answers = best_answer_spans(logits, windows["offsets"],
                                windows["example_index"],
                                [e["context"] for e in dev])
    return scores(dev, answers)


def main():
    args = parse_args(__doc__, train_size=500, eval_size=300, max_length=256,
                      epochs=2, batch_size=16, learning_rate=1e-4,
                      extra={"doc_stride": 128})
    data = load(args)
    results = {}
    if "keras_bert" in args.libraries:
        results["keras_bert"] = timed(run_keras, data, args)
    if "transformers" in args.libraries:
        results["transformers"] = timed(run_transformers, data, args)
    report("squad_v1.1", args, results)


if __name__ == "__main__":
    main()
