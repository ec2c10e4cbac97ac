"""Shared recipe and training loops of the fine-tuning benchmarks.

Each `bench/finetune_<task>.py` fine-tunes all-MiniLM-L6-v2 on one task
twice, with keras_bert (on `KERAS_BACKEND`) and with `transformers`
(PyTorch), from the same recipe: the same examples in the same order
(one seeded permutation per epoch, shared by both), the same maximum
length, batch size, epochs, peak learning rate, 10% linear warmup then
linear decay to 0, AdamW (weight decay 0.01, not on biases/LayerNorm,
epsilon 1e-6), gradient clipping at 1.0, and the same initial head
weights (seeded truncated normal, std 0.02). Only the dropout masks and
floating-point order differ. Both sides are scored by `keras_bert.metrics`.

The keras_bert side uses the public API: `from_preset` on the MiniLM
folder, the task preprocessor, `compile(num_train_steps=...)`, `fit`.
The transformers side uses `BertFor*.from_pretrained`, `BertTokenizerFast`
and a plain PyTorch loop with `get_linear_schedule_with_warmup`.
"""

import argparse
import json
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import minilm_dir  # noqa: E402,F401

DATA = os.environ.get("KERAS_BERT_DATA", "/work/shared/data")
LIBRARIES = ("keras_bert", "transformers")


def parse_args(description, **defaults):
    """Command-line recipe; `defaults` are the task's choices."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--library", choices=LIBRARIES + ("both",),
                        default="both")
    parser.add_argument("--train-size", type=int, default=defaults["train_size"])
    parser.add_argument("--eval-size", type=int,
                        default=defaults.get("eval_size"))
    parser.add_argument("--max-length", type=int, default=defaults["max_length"])
    parser.add_argument("--epochs", type=int, default=defaults.get("epochs", 3))
    parser.add_argument("--batch-size", type=int,
                        default=defaults.get("batch_size", 32))
    parser.add_argument("--learning-rate", type=float,
                        default=defaults.get("learning_rate", 5e-5))
    parser.add_argument("--warmup-ratio", type=float, default=0.1)
    parser.add_argument("--weight-decay", type=float, default=0.01)
    parser.add_argument("--dropout", type=float, default=0.1,
                        help="hidden, attention and head dropout (both sides)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", default=None,
                        help="write the results as JSON to this file")
    for name, value in defaults.get("extra", {}).items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(value),
                            default=value)
    args = parser.parse_args()
    args.libraries = LIBRARIES if args.library == "both" else (args.library,)
    return args


def training_order(num_examples, epochs, seed):
    """Example indices for the whole run: one permutation per epoch."""
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.permutation(num_examples) for _ in range(epochs)])


def num_steps(order, batch_size):
    return math.ceil(len(order) / batch_size)


def head_init(input_dim, units, seed):
    """Initial head weights `(kernel (in, out), bias)` shared by both sides."""
    rng = np.random.default_rng(seed + 1)
    kernel = rng.normal(0.0, 0.02, size=(input_dim, units))
    kernel = np.clip(kernel, -0.04, 0.04).astype("float32")  # truncated
    return kernel, np.zeros(units, "float32")


def subset(num_examples, size, seed):
    """A seeded random subset of example indices (all when size is None)."""
    if size is None or size >= num_examples:
        return np.arange(num_examples)
    return np.sort(np.random.default_rng(seed).choice(num_examples, size,
                                                      replace=False))


# keras_bert ---------------------------------------------------------------


def keras_backbone(args):
    """MiniLM as a `BertBackbone`, seeded, with the recipe's dropout."""
    import keras

    from keras_bert.models.bert_backbone import BertBackbone

    keras.utils.set_random_seed(args.seed)
    # `dropout=` sets the attention dropout too, as `torch_model` does.
    return BertBackbone.from_preset(minilm_dir(), dropout=args.dropout)


def keras_tokenizer():
    from keras_bert.preprocessing import BertTokenizer

    return BertTokenizer.from_preset(minilm_dir())


def keras_compile_and_fit(model, x, y, order, args):
    """Fits on `x[order]` in that order, with the paper's compile()."""
    steps = num_steps(order, args.batch_size)
    model.compile(
        learning_rate=args.learning_rate,
        num_train_steps=steps,
        warmup_ratio=args.warmup_ratio,
        weight_decay=args.weight_decay,
    )
    model.fit(reorder(x, order), reorder(y, order),
              batch_size=args.batch_size, epochs=1, shuffle=False, verbose=2)


def reorder(data, order):
    """`data[order]` for an array, a list, or a tuple (pairs) or dict
    (model inputs by name) of them."""
    if isinstance(data, dict):
        return {key: reorder(part, order) for key, part in data.items()}
    if isinstance(data, tuple):
        return tuple(reorder(part, order) for part in data)
    if isinstance(data, list):
        return [data[i] for i in order]
    return np.asarray(data)[order]


# transformers ------------------------------------------------------------


def torch_model(model_class, args, **kwargs):
    """MiniLM as a `transformers` model class, seeded, the recipe's dropout."""
    import torch
    import transformers

    torch.manual_seed(args.seed)
    transformers.logging.set_verbosity_error()
    return model_class.from_pretrained(
        minilm_dir(),
        hidden_dropout_prob=args.dropout,
        attention_probs_dropout_prob=args.dropout,
        **kwargs,
    )


def torch_tokenizer():
    from transformers import BertTokenizerFast

    return BertTokenizerFast.from_pretrained(minilm_dir())


def torch_set_head(linear, kernel, bias):
    import torch

    with torch.no_grad():
        linear.weight.copy_(torch.from_numpy(kernel.T))
        linear.bias.copy_(torch.from_numpy(bias))


def torch_train(model, features, order, args):
    """The reference loop: AdamW, linear warmup/decay, clip 1.0.

    `features` is a dict of equally long tensors, labels included under the
    names the `transformers` model takes (`labels`, `start_positions`, ...).
    """
    import torch
    from transformers import get_linear_schedule_with_warmup

    no_decay = ("bias", "LayerNorm.weight")
    groups = [
        {"params": [p for n, p in model.named_parameters()
                    if not any(k in n for k in no_decay)],
         "weight_decay": args.weight_decay},
        {"params": [p for n, p in model.named_parameters()
                    if any(k in n for k in no_decay)],
         "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(groups, lr=args.learning_rate, eps=1e-6)
    steps = num_steps(order, args.batch_size)
    schedule = get_linear_schedule_with_warmup(
        optimizer, int(args.warmup_ratio * steps), steps
    )
    model.train()
    start = time.time()
    for step in range(steps):
        index = torch.from_numpy(
            order[step * args.batch_size: (step + 1) * args.batch_size]
        )
        loss = model(**{k: v[index] for k, v in features.items()}).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        if step % 20 == 0 or step == steps - 1:
            print(f"  step {step + 1}/{steps} loss {loss.item():.4f} "
                  f"({time.time() - start:.0f}s)", flush=True)


def torch_predict(model, features, batch_size=64):
    """Concatenated `model(**batch)` outputs (no labels), as NumPy."""
    import torch

    model.eval()
    count = len(next(iter(features.values())))
    outputs = []
    with torch.no_grad():
        for first in range(0, count, batch_size):
            batch = {k: v[first: first + batch_size] for k, v in features.items()}
            outputs.append(model(**batch))
    return outputs


# Reporting ---------------------------------------------------------------


def report(task, args, results):
    """Prints the comparison and writes it as JSON when asked."""
    import keras

    payload = {
        "task": task,
        "keras_backend": keras.config.backend(),
        "recipe": {k: v for k, v in vars(args).items()
                   if k not in ("output", "library", "libraries")},
        "results": results,
    }
    print(json.dumps(payload, indent=1))
    if args.output:
        with open(args.output, "w") as handle:
            json.dump(payload, handle, indent=1)


def timed(function, *args):
    start = time.time()
    scores = function(*args)
    scores["seconds"] = round(time.time() - start, 1)
    return scores
