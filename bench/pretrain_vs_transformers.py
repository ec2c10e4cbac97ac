"""Pretraining side by side: keras_bert vs transformers
(`BertForPreTraining`, or `BertForMaskedLM` without NSP) for the same
minutes of training on the same data.

Both libraries get the same corpus, vocabulary, model size (BERT tiny by
default: 2 layers, hidden 128), batch stream (the same seeded pairs and
masks from keras_bert's `tf.data` pipeline, handed to transformers as
`labels` with -100 off the masked positions and `next_sentence_label`
flipped to its convention), recipe (initial weights' stddev, peak rate,
warmup share, linear decay, AdamW with the recipe's beta_2 and weight
decay 0.01 off biases and LayerNorm, clipping at 1.0, dropout) and
wall-clock budget for training.
Each library times a few steps, puts its model back, sizes its schedule
to the budget and trains; then both are scored on the same held-out
masks and sentence pairs (`evaluate_pretraining`). transformers runs as
its users run it: eager PyTorch, the MLM decoder over every position.
Each library runs in its own process, one after the other; run on an
otherwise idle machine.

    python -m bench.pretrain_vs_transformers --base /tmp/runs/base \\
        --minutes 3 --output /tmp/bench_results/pretrain_vs_hf.json --table

`--base DIR` is a `keras-bert pretrain` run directory (its corpus/ and
vocab.txt are used). `--table` writes the results into the "Side by side
with transformers" section of docs/pretraining.md.
"""

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import time
import types

from bench.common import REPO_ROOT
from bench.common import WORKER_ENV
from bench.common import MALLOC_WORDS
from bench.common import add_reference_malloc_argument
from bench.common import machine_info
from bench.common import reference_malloc_env
from bench.common import write_section

DOC = os.path.join(REPO_ROOT, "docs", "pretraining.md")
SECTION = "### Side by side with transformers"
RUNS = ("keras_bert:tensorflow", "keras_bert:jax", "keras_bert:torch",
        "transformers")


def job_settings(args):
    from keras_bert.training.pretraining.pretraining_settings import (
        PretrainingSettings,
    )

    return PretrainingSettings(
        corpus_files=sorted(glob.glob(os.path.join(args.base, "corpus",
                                                   "*.txt"))),
        corpus_format="sentences", vocabulary=os.path.join(args.base,
                                                           "vocab.txt"),
        config=args.config, recipe=args.recipe, steps=1, minutes=None,
        seed=args.seed, next_sentence_prediction=args.nsp,
    ).resolved()


def keras_bert_worker(args):
    from keras_bert.training.pretraining.pretraining_job import PretrainingJob
    from keras_bert.training.pretraining.step_budget import StepBudget

    job = PretrainingJob(os.path.join(args.scratch, "keras_bert"),
                         job_settings(args), print_fn=None)
    job.prepare()
    budget = StepBudget(args.minutes * 60, time.perf_counter(),
                        reserve_seconds=0, reserve_fraction=0)
    rate = budget.measure_step_rate(job.model, job.training_batches())
    job.set_steps(budget.steps(rate))
    job.train()
    results = job.evaluate()
    return {"steps": job.steps, "timed_rate": rate,
            "train_s": job.timings["train_s"], "results": results}


class TransformersScorer:
    """`predict_on_batch` in `evaluate_pretraining`'s terms."""

    def __init__(self, model):
        self.model = model
        # What `fill_mask` reads of a BertPretrainer.
        self.backbone = types.SimpleNamespace(
            max_sequence_length=model.config.max_position_embeddings)

    def __call__(self, x, training=False):
        return self.predict_on_batch(x)

    def predict_on_batch(self, x):
        import torch

        with torch.no_grad():
            out = self.model(**hf_inputs(x))
        positions = torch.as_tensor(x["mask_positions"], dtype=torch.long)
        # BertForPreTraining's field, or BertForMaskedLM's.
        vocabulary = getattr(out, "prediction_logits", None)
        if vocabulary is None:
            vocabulary = out.logits
        logits = torch.gather(
            vocabulary, 1,
            positions[..., None].expand(-1, -1, vocabulary.shape[-1]))
        outputs = {"mlm_logits": logits.numpy()}
        if getattr(out, "seq_relationship_logits", None) is not None:
            # transformers' label 0 is IsNext; keras_bert's 1 is.
            outputs["nsp_logits"] = (
                out.seq_relationship_logits.flip(-1).numpy())
        return outputs


def hf_inputs(x):
    import torch

    return {
        "input_ids": torch.as_tensor(x["token_ids"], dtype=torch.long),
        "token_type_ids": torch.as_tensor(x["segment_ids"], dtype=torch.long),
        "attention_mask": torch.as_tensor(x["padding_mask"],
                                          dtype=torch.long),
    }


def hf_labels(x, y, w):
    import torch

    ids = torch.as_tensor(x["token_ids"], dtype=torch.long)
    labels = torch.full_like(ids, -100)
    positions = torch.as_tensor(x["mask_positions"], dtype=torch.long)
    used = torch.as_tensor(w["mlm_logits"]) > 0
    rows = torch.arange(ids.shape[0])[:, None].expand_as(positions)
    labels[rows[used], positions[used]] = torch.as_tensor(
        y["mlm_logits"], dtype=torch.long)[used]
    extra = {"labels": labels}
    if "nsp_logits" in y:
        extra["next_sentence_label"] = 1 - torch.as_tensor(
            y["nsp_logits"], dtype=torch.long)
    return extra


def transformers_worker(args):
    import numpy as np
    import torch
    import transformers

    from keras_bert.configs import get_backbone_config
    from keras_bert.training.pretraining.pretraining_job import PretrainingJob
    from keras_bert.training.pretraining.pretraining_report import (
        heldout_evaluation,
    )

    torch.set_num_threads(os.cpu_count())
    torch.manual_seed(args.seed)
    # The same corpus, vocabulary and batch stream as keras_bert's job;
    # its own model is never trained.
    job = PretrainingJob(os.path.join(args.scratch, "transformers"),
                         job_settings(args), print_fn=None)
    job.prepare()
    s = job.settings
    size = get_backbone_config(s.config)
    # What a transformers user pretrains with: both heads, or masked LM
    # only.
    model_class = (transformers.BertForPreTraining
                   if s.next_sentence_prediction
                   else transformers.BertForMaskedLM)
    model = model_class(transformers.BertConfig(
        vocab_size=job.tokenizer.vocabulary_size(),
        hidden_size=size["hidden_dim"], num_hidden_layers=size["num_layers"],
        num_attention_heads=size["num_heads"],
        intermediate_size=size["intermediate_dim"],
        max_position_embeddings=max(512, s.sequence_length),
        hidden_dropout_prob=s.dropout, attention_probs_dropout_prob=s.dropout,
        initializer_range=s.initializer_range, hidden_act="gelu"))
    batches = job.training_batches().as_numpy_iterator()

    def step(optimizer, scheduler):
        x, y, w = next(batches)
        loss = model(**hf_inputs(x), **hf_labels(x, y, w)).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()

    def fresh_optimizer(steps):
        decay = [p for n, p in model.named_parameters()
                 if not any(k in n for k in ("bias", "LayerNorm"))]
        rest = [p for n, p in model.named_parameters()
                if any(k in n for k in ("bias", "LayerNorm"))]
        optimizer = torch.optim.AdamW(
            [{"params": decay, "weight_decay": 0.01},
             {"params": rest, "weight_decay": 0.0}],
            lr=s.learning_rate, betas=(0.9, s.beta_2), eps=1e-6)
        warmup = max(1, round(s.warmup_fraction * steps))
        return optimizer, transformers.get_linear_schedule_with_warmup(
            optimizer, warmup, steps)

    model.train()
    saved = {k: v.clone() for k, v in model.state_dict().items()}
    optimizer, scheduler = fresh_optimizer(1000)
    step(optimizer, scheduler)
    times = []
    for _ in range(10):
        start = time.perf_counter()
        step(optimizer, scheduler)
        times.append(time.perf_counter() - start)
    rate = 1.0 / float(np.median(times))
    model.load_state_dict(saved)
    steps = int(args.minutes * 60 * rate)
    batches = job.training_batches().as_numpy_iterator()  # the stream from its start
    optimizer, scheduler = fresh_optimizer(steps)
    start = time.perf_counter()
    for _ in range(steps):
        step(optimizer, scheduler)
    train_s = time.perf_counter() - start
    model.eval()
    results = heldout_evaluation(
        TransformersScorer(model), job.corpus, job.tokenizer,
        s.sequence_length, s.batch_size, s.next_sentence_prediction, s.seed)
    results.pop("fill_mask_examples")
    return {"steps": steps, "timed_rate": rate, "train_s": train_s,
            "results": results}


def run(name, args):
    library, _, backend = name.partition(":")
    scratch = os.path.join(args.scratch, name.replace(":", "-"))
    # Each run starts a fresh job there (a job refuses a used directory).
    shutil.rmtree(scratch, ignore_errors=True)
    command = [sys.executable, "-m", "bench.pretrain_vs_transformers",
               "--worker", library, "--base", args.base, "--minutes",
               str(args.minutes), "--config", args.config, "--recipe",
               args.recipe, "--seed", str(args.seed), "--scratch", scratch]
    if args.nsp is not None:
        command.append("--nsp" if args.nsp else "--no-nsp")
    env = {**os.environ, **WORKER_ENV,
           "KERAS_BACKEND": backend or "tensorflow"}
    if library == "transformers":
        env.update(reference_malloc_env(args.reference_malloc))
    load = os.getloadavg()[0]
    completed = subprocess.run(command, env=env, cwd=REPO_ROOT,
                               capture_output=True, text=True)
    if completed.returncode:
        raise SystemExit(f"{name} failed:\n{completed.stderr[-4000:]}")
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    result.update(run=name, load_before=load, load_after=os.getloadavg()[0])
    return result


def table(payload):
    lines = [
        "Each library in its own process, one after the other: the same "
        "corpus, vocabulary, seeded batches and masks, recipe and model "
        "size, and the same wall-clock minutes of training (keras_bert's "
        "include compiling its train step; transformers runs eager, its "
        "MLM decoder over every position), then the same held-out masks. "
        "Command: `python -m bench.pretrain_vs_transformers --base RUN_DIR "
        f"--minutes {payload['minutes']:g} --table`.",
        "",
        f"Budget: {payload['minutes']:g} min of training per library; "
        f"{payload['recipe']} recipe, BERT {payload['config']}; CPU: "
        f"{payload['machine']['cpu']}, {payload['machine']['cores']} cores, "
        f"flags {' '.join(payload['machine']['isa'])}."
        # Runs from before the malloc settings had glibc's defaults in all.
        + (f" transformers' malloc: {MALLOC_WORDS[malloc]}."
           if (malloc := payload.get("reference_malloc")) else ""),
        "",
        "| library | steps | steps/s | held-out masked-token acc. | MLM "
        "loss | NSP acc. (majority) | load |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in payload["rows"]:
        r = row["results"]
        nsp = (f"{r['nsp_accuracy']:.1%} ({r['nsp_majority']:.1%})"
               if "nsp_accuracy" in r else "n/a")
        lines.append(
            f"| {row['run']} | {row['steps']:,} | "
            f"{row['steps'] / row['train_s']:.2f} | {r['mlm_accuracy']:.1%}"
            f" (unigram {r['unigram_accuracy']:.1%}) | {r['mlm_loss']:.3f} "
            f"| {nsp} | {row['load_before']:.1f} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base")
    parser.add_argument("--minutes", type=float, default=3.0)
    parser.add_argument("--config", default="tiny")
    parser.add_argument("--recipe", default="budget")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--nsp", action=argparse.BooleanOptionalAction,
                        help="default: the recipe's")
    parser.add_argument("--runs", nargs="+", default=list(RUNS))
    add_reference_malloc_argument(parser)
    parser.add_argument("--scratch", default="/tmp/pretrain_vs_transformers")
    parser.add_argument("--output")
    parser.add_argument("--table", action="store_true")
    parser.add_argument("--render", metavar="JSON",
                        help="no runs: the table of an earlier --output")
    parser.add_argument("--worker", choices=("keras_bert", "transformers"))
    args = parser.parse_args()
    if args.worker:
        worker = (keras_bert_worker if args.worker == "keras_bert"
                  else transformers_worker)
        print(json.dumps(worker(args), default=float))
        return
    if args.render:
        with open(args.render) as file:
            payload = json.load(file)
    else:
        payload = {"minutes": args.minutes, "config": args.config,
                   "recipe": args.recipe, "machine": machine_info(),
                   "reference_malloc": args.reference_malloc,
                   "rows": []}
        for name in args.runs:
            payload["rows"].append(run(name, args))
            print(table(payload).splitlines()[-1], flush=True)
    if args.output:
        with open(args.output, "w") as file:
            json.dump(payload, file, indent=1)
    if args.table:
        write_section(DOC, SECTION, f"{SECTION}\n\n<!-- written by "
                      "bench/pretrain_vs_transformers.py --table -->\n\n" + table(payload))


if __name__ == "__main__":
    main()
