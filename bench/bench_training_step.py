"""Training-step speed: keras_bert vs transformers, mini BERT at length 128.

Two steps, each a full optimizer update (forward, backward, AdamW with
weight decay and global-norm clipping) on one synthetic batch:

* pretraining: `keras_bert.BertPretrainer` (MLM + NSP, the MLM head only
  at the `num_masks` selected positions) compiled with its defaults, vs
  `transformers.BertForPreTraining` (its MLM head scores every position;
  labels -100 elsewhere) with `torch.optim.AdamW`.
* classifier: `keras_bert.models.BertClassifier` (2 classes, the
  fine-tuning recipe of its `compile`) vs `BertForSequenceClassification`.

Same config (bert mini: 4 layers, hidden 256, 4 heads, vocabulary 30,522),
dropout 0.1 everywhere, random weights (time does not depend on values).
keras_bert uses `train_on_batch` with XLA on JAX and TensorFlow
(`jit_compile=True`), eager on PyTorch; transformers runs eager.
`--torch-compile` adds keras_bert on PyTorch with `jit_compile=True`
(Keras compiles the train step with `torch.compile`) as
"keras_bert/torch-compile"; `--earlier-kernels` adds keras_bert on PyTorch
with Keras' own `Dense` products and `ops.dot_product_attention` instead
of `keras_bert.fused_ops` ("keras_bert/torch-earlier"), the same process's
before and after.

    python -m bench.bench_training_step --output bench/results/training.json
"""

import argparse
import time

from bench import common

BACKENDS = ("jax", "tensorflow", "torch")
REFERENCE = "transformers/torch"
NUM_MASKS = 20  # 15% of 128, rounded as BERT's max_predictions_per_seq


def synthetic_batch(batch, length, vocabulary_size, seed=0,
                    num_masks=NUM_MASKS):
    import numpy as np

    rng = np.random.default_rng(seed)
    ids = rng.integers(1000, vocabulary_size, size=(batch, length))
    ids[:, 0] = 101
    segment_ids = (np.arange(length) >= length // 2).astype("int32")
    positions = np.sort(np.stack([
        rng.choice(np.arange(1, length), num_masks, replace=False)
        for _ in range(batch)]), axis=1)
    return {
        "token_ids": ids.astype("int32"),
        "segment_ids": np.repeat(segment_ids[None], batch, 0),
        "padding_mask": np.ones((batch, length), "int32"),
        "mask_positions": positions.astype("int32"),
        "mask_ids": np.take_along_axis(ids, positions, 1).astype("int32"),
        "labels": rng.integers(0, 2, size=(batch,)).astype("int32"),
    }


def mini_config():
    from keras_bert.configs import get_backbone_config

    return get_backbone_config("mini")


def keras_step(case):
    import keras

    import keras_bert
    from bench.keras_runtime import keras_ops_in_fused_ops
    from keras_bert.models.bert_classifier import BertClassifier

    config = mini_config()
    data = synthetic_batch(case["batch"], case["length"],
                           config["vocabulary_size"])
    backbone = keras_bert.BertBackbone(**config)
    features = {k: data[k] for k in ("token_ids", "segment_ids",
                                     "padding_mask")}
    # XLA where Keras compiles it, unless the case says.
    jit = case.get("jit_compile", keras.config.backend() != "torch")
    if case["task"] == "pretraining":
        model = keras_bert.BertPretrainer(backbone)
        model.compile(total_steps=1000, jit_compile=jit)
        x = {**features, "mask_positions": data["mask_positions"]}
        y = {"mlm_logits": data["mask_ids"], "nsp_logits": data["labels"]}
        weights = {"mlm_logits": (data["mask_ids"] * 0 + 1).astype("float32"),
                   "nsp_logits": (data["labels"] * 0 + 1).astype("float32")}
        step = lambda: model.train_on_batch(x, y, sample_weight=weights)
    else:
        model = BertClassifier(backbone, num_classes=2)
        model.compile(num_train_steps=1000, jit_compile=jit)
        step = lambda: model.train_on_batch(features, data["labels"])
    if not case.get("earlier_kernels"):
        return step

    def earlier_step():
        with keras_ops_in_fused_ops():
            return step()

    return earlier_step


def transformers_step(case):
    import torch
    import transformers

    config = mini_config()
    hf_config = transformers.BertConfig(
        vocab_size=config["vocabulary_size"],
        hidden_size=config["hidden_dim"],
        num_hidden_layers=config["num_layers"],
        num_attention_heads=config["num_heads"],
        intermediate_size=config["intermediate_dim"],
        hidden_dropout_prob=config["dropout"],
        attention_probs_dropout_prob=config["dropout"],
        max_position_embeddings=config["max_sequence_length"],
    )
    data = synthetic_batch(case["batch"], case["length"],
                           config["vocabulary_size"])
    inputs = {
        "input_ids": torch.from_numpy(data["token_ids"]).long(),
        "token_type_ids": torch.from_numpy(data["segment_ids"]).long(),
        "attention_mask": torch.from_numpy(data["padding_mask"]).long(),
    }
    labels = torch.from_numpy(data["labels"]).long()
    if case["task"] == "pretraining":
        model = transformers.BertForPreTraining(hf_config)
        mlm_labels = torch.full(inputs["input_ids"].shape, -100)
        positions = torch.from_numpy(data["mask_positions"]).long()
        mlm_labels.scatter_(1, positions,
                            torch.from_numpy(data["mask_ids"]).long())
        targets = {"labels": mlm_labels, "next_sentence_label": labels}
    else:
        model = transformers.BertForSequenceClassification(
            hf_config.__class__(**{**hf_config.to_dict(), "num_labels": 2}))
        targets = {"labels": labels}
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4,
                                  weight_decay=0.01, eps=1e-6)

    def step():
        loss = model(**inputs, **targets).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return float(loss)

    return step


def make_prepare(worker):
    return transformers_step if worker == "transformers" else keras_step


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--tasks", default="pretraining,classifier")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--torch-compile", action="store_true",
                        help="also keras_bert on torch with jit_compile=True")
    parser.add_argument("--earlier-kernels", action="store_true",
                        help="also keras_bert on torch with Keras' Dense "
                        "products and dot_product_attention")
    common.add_reference_malloc_argument(parser)
    parser.add_argument("--output")
    args = parser.parse_args()
    if args.worker:
        return common.serve(make_prepare(args.worker))

    labels = [REFERENCE] + [f"keras_bert/{b}" for b in args.backends.split(",")]
    if args.torch_compile:
        labels.append("keras_bert/torch-compile")
    if args.earlier_kernels:
        labels.append("keras_bert/torch-earlier")
    groups = {
        f"{task}@{args.batch}x{args.length}": [
            (label, "transformers" if label == REFERENCE
             else "keras-" + label.split("/")[1].split("-")[0],
             {"task": task, "batch": args.batch, "length": args.length,
              **({"jit_compile": True} if label.endswith("-compile")
                 else {}),
              **({"earlier_kernels": True} if label.endswith("-earlier")
                 else {})})
            for label in labels]
        for task in args.tasks.split(",")
    }
    started = time.time()
    results = common.run_workers("bench.bench_training_step", groups,
                                 args.rounds, args.calls,
                                 reference_malloc=args.reference_malloc)
    summary = {}
    for group, entries in results.items():
        summary[group] = {
            label: {
                "ms": entry["times"] and 1000 * common.median_time(entry),
                "speedup_vs_transformers": common.paired_speedup(
                    entry, entries[REFERENCE]),
                "error": entry["error"],
            }
            for label, entry in entries.items()
        }
    print(common.format_rows(summary, [
        ("ms", "ms / step", ".0f"),
        ("speedup_vs_transformers", "x transformers", ".2f")]))
    if args.output:
        common.write_json(args.output, {
            "machine": common.machine_info(), "args": vars(args),
            "minutes": (time.time() - started) / 60, "summary": summary,
            "raw": results})


if __name__ == "__main__":
    main()
