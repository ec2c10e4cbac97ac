"""SQuAD v1.1 extractive QA: keras_bert vs transformers, same recipe.

Trains on a seeded subset of the 3,807 training questions in shared/data
(`squad/train-v1.1-first11articles.json`) and scores the official
SQuAD v1.1 exact match and F1 on the first `--eval-size` questions of the
dev set (`squad/dev-v1.1.json`). Windows: `--max-length` tokens,
consecutive windows `--doc-stride` tokens apart, questions cut to 64
pieces; windows without the answer are labelled at [CLS], questions whose
answer is in no window are left out of training (both sides).

Each side makes its own windows (keras_bert's preprocessor; the
`transformers` fast tokenizer's overflow windows with offsets) and the
script checks that they are the same token ids, segments, masks, offsets
and labels, so both train on the same features in the same order.
Answers: 20-best starts and ends per window, at most 30 tokens, best over
windows. keras_bert's answers come from `BertQuestionAnswerer.answer`;
transformers' from `hf_best_answers` below, a separate implementation
of the n-best rules of transformers' `examples/pytorch/question-
answering/utils_qa.py`, so a bug in keras_bert's post-processing shows up
as a difference. As a cross-check the transformers logits are also
decoded by keras_bert's post-processing (`transformers_logits_keras_post`).

    KERAS_BACKEND=jax python bench/finetune_squad.py --dropout 0 \
        --output /tmp/squad.json

(The defaults are the measured run of docs/finetuning.md: 300 training
questions, the first 200 dev questions, length 256, 44 steps of 8, peak
rate 2e-4; about 15 minutes for both libraries on 2 CPU cores.)
"""

import time

import numpy as np

from finetune_common import DATA
from finetune_common import head_init
from finetune_common import keras_backbone
from finetune_common import keras_compile_and_fit
from finetune_common import keras_tokenizer
from finetune_common import parse_args
from finetune_common import report
from finetune_common import subset
from finetune_common import torch_model
from finetune_common import torch_predict
from finetune_common import torch_set_head
from finetune_common import torch_tokenizer
from finetune_common import torch_train
from finetune_common import training_order

MAX_QUERY_LENGTH = 64
N_BEST_SIZE = 20
MAX_ANSWER_LENGTH = 30


def load(args):
    from keras_bert.preprocessing.tasks import read_squad

    train = read_squad(f"{DATA}/squad/train-v1.1-first11articles.json")
    train = [train[i] for i in subset(len(train), args.train_size, args.seed)]
    dev = read_squad(f"{DATA}/squad/dev-v1.1.json")[: args.eval_size]
    return train, dev


def scores(dev, texts):
    from keras_bert.metrics import squad_scores

    return squad_scores(
        {example["id"]: text for example, text in zip(dev, texts)},
        {example["id"]: [a["text"] for a in example["answers"]]
         for example in dev},
    )


def columns(examples):
    return ([e["question"] for e in examples], [e["context"] for e in examples])


def first_answers(examples):
    return [(e["answers"][0]["answer_start"], e["answers"][0]["text"])
            for e in examples]


def keras_preprocessor(args):
    from keras_bert.preprocessing.tasks import BertQuestionAnswererPreprocessor

    return BertQuestionAnswererPreprocessor(
        keras_tokenizer(), sequence_length=args.max_length,
        doc_stride=args.doc_stride, max_query_length=MAX_QUERY_LENGTH,
    )


def run_keras(data, args):
    from keras_bert.models.bert_question_answerer import BertQuestionAnswerer
    from keras_bert.models.bert_question_answerer import span_loss

    train, dev = data
    start = time.time()
    preprocessor = keras_preprocessor(args)
    model = BertQuestionAnswerer(keras_backbone(args), preprocessor=preprocessor)
    model.qa_head.set_weights(head_init(model.backbone.hidden_dim, 2, args.seed))
    windows = preprocessor.windows(*columns(train), answers=first_answers(train))
    print(f"  keras_bert: {len(windows['labels'])} training windows, "
          f"{len(windows['skipped'])} questions skipped", flush=True)
    order = training_order(len(windows["labels"]), args.epochs, args.seed)
    first = order[: args.batch_size]
    step0 = float(np.mean(span_loss(
        windows["labels"][first],
        model({k: v[first] for k, v in windows["inputs"].items()},
              training=False))))
    print(f"  keras_bert: step-0 loss (first batch, no dropout) {step0:.4f}",
          flush=True)
    keras_compile_and_fit(model, windows["inputs"], windows["labels"], order,
                          args)
    answers = model.answer(*columns(dev), batch_size=64, verbose=0)
    result = scores(dev, [a["text"] for a in answers])
    result.update(step0_loss=round(step0, 4), train_windows=len(order) //
                  args.epochs, seconds=round(time.time() - start, 1))
    return result, windows


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
        question = example["question"]
        question_length = len(tokenizer(question, add_special_tokens=False)
                              ["input_ids"])
        # run_qa.py does not cut questions; none in SQuAD v1.1 reaches 64.
        assert question_length <= MAX_QUERY_LENGTH, example["id"]
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


def hf_best_answers(start_logits, end_logits, offsets, example_index,
                    contexts):
    """transformers' `postprocess_qa_predictions` (SQuAD v1, no null answer).

    Written to the rules of `utils_qa.py`, not from keras_bert: per window
    the `N_BEST_SIZE` largest start and end logits, spans whose ends are both
    context tokens, end >= start, length <= `MAX_ANSWER_LENGTH`; the
    candidates of all windows sorted by start + end logit, best first.
    """
    features = {}
    for window, example in enumerate(example_index):
        features.setdefault(int(example), []).append(window)
    texts = []
    for example, context in enumerate(contexts):
        candidates = []
        for window in features.get(example, []):
            mapping = [None if o[0] < 0 else (int(o[0]), int(o[1]))
                       for o in offsets[window]]
            start_indexes = np.argsort(-start_logits[window])[:N_BEST_SIZE]
            end_indexes = np.argsort(-end_logits[window])[:N_BEST_SIZE]
            for s in start_indexes:
                for e in end_indexes:
                    if (s >= len(mapping) or e >= len(mapping)
                            or mapping[s] is None or mapping[e] is None):
                        continue
                    if e < s or e - s + 1 > MAX_ANSWER_LENGTH:
                        continue
                    candidates.append({
                        "offsets": (mapping[s][0], mapping[e][1]),
                        "score": start_logits[window][s] + end_logits[window][e],
                    })
        candidates = sorted(candidates, key=lambda c: c["score"],
                            reverse=True)[:N_BEST_SIZE]
        texts.append(context[candidates[0]["offsets"][0]:
                             candidates[0]["offsets"][1]]
                     if candidates else "")
    return texts


def run_transformers(data, args):
    import torch
    from transformers import BertForQuestionAnswering

    from keras_bert.preprocessing.tasks import best_answer_spans

    train, dev = data
    start = time.time()
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
    order = training_order(len(windows["input_ids"]), args.epochs, args.seed)
    model.eval()
    with torch.no_grad():
        first = torch.from_numpy(order[: args.batch_size])
        step0 = model(**{k: v[first] for k, v in features.items()}).loss.item()
    print(f"  transformers: step-0 loss (first batch, no dropout) "
          f"{step0:.4f}", flush=True)
    torch_train(model, features, order, args)
    dev_windows, _ = hf_windows(tokenizer, dev, args, with_labels=False)
    outputs = torch_predict(
        model, {k: torch.tensor(dev_windows[k]) for k in inputs}, batch_size=64)
    start_logits = torch.cat([o.start_logits for o in outputs]).numpy()
    end_logits = torch.cat([o.end_logits for o in outputs]).numpy()
    contexts = [e["context"] for e in dev]
    result = scores(dev, hf_best_answers(
        start_logits, end_logits, dev_windows["offsets"],
        dev_windows["example_index"], contexts))
    keras_post = best_answer_spans(
        np.stack([start_logits, end_logits], -1), dev_windows["offsets"],
        dev_windows["example_index"], contexts,
        n_best_size=N_BEST_SIZE, max_answer_length=MAX_ANSWER_LENGTH)
    result.update(step0_loss=round(step0, 4), train_windows=len(order) //
                  args.epochs, seconds=round(time.time() - start, 1),
                  transformers_logits_keras_post=scores(
                      dev, [a["text"] for a in keras_post]))
    return result, windows


def same_features(keras_windows, hf_windows):
    """How many training windows differ between the two sides (0: same)."""
    if len(keras_windows["labels"]) != len(hf_windows["input_ids"]):
        return f"{len(keras_windows['labels'])} vs {len(hf_windows['input_ids'])}"
    labels = np.stack([hf_windows["start_positions"],
                       hf_windows["end_positions"]], -1)
    differ = (keras_windows["labels"] != labels).any(-1)
    for ours, theirs in (("token_ids", "input_ids"),
                         ("segment_ids", "token_type_ids"),
                         ("padding_mask", "attention_mask")):
        differ |= (keras_windows["inputs"][ours] != hf_windows[theirs]).any(-1)
    differ |= (keras_windows["offsets"] != hf_windows["offsets"]).any((1, 2))
    return int(differ.sum())


def main():
    args = parse_args(__doc__, train_size=300, eval_size=200, max_length=256,
                      epochs=1, batch_size=8, learning_rate=2e-4,
                      extra={"doc_stride": 128})
    data = load(args)
    results, windows = {}, {}
    if "keras_bert" in args.libraries:
        results["keras_bert"], windows["keras_bert"] = run_keras(data, args)
    if "transformers" in args.libraries:
        results["transformers"], windows["transformers"] = run_transformers(
            data, args)
    if len(windows) == 2:
        results["training_windows_that_differ"] = same_features(
            windows["keras_bert"], windows["transformers"])
        for score in ("exact_match", "f1"):
            results[f"{score}_difference"] = round(
                results["keras_bert"][score]
                - results["transformers"][score], 2)
    report("squad_v1.1", args, results)


if __name__ == "__main__":
    main()
