"""What a pretraining run reports when it has trained: the held-out
evaluation, the final preset and the loss-curve plot.

Helpers of `PretrainingJob` (its `evaluate` and `save` stages).
"""

import json
import os

import keras

from keras_bert.checkpoints.saving import save_to_preset
from keras_bert.training.loss_curves import plot_loss_curves
from keras_bert.training.loss_curves import read_metrics
from keras_bert.training.pretraining.pretraining_data import batch_pairs
from keras_bert.training.pretraining.pretraining_data import pair_dataset
from keras_bert.training.pretraining.pretraining_data import tokenize_documents
from keras_bert.training.pretraining.pretraining_evaluation import evaluate_pretraining
from keras_bert.training.pretraining.pretraining_evaluation import fill_mask_examples
from keras_bert.training.pretraining.pretraining_evaluation import fill_mask_summary
from keras_bert.training.pretraining.pretraining_evaluation import unigram_counts


def heldout_evaluation(model, corpus, tokenizer, sequence_length, batch_size,
                       next_sentence_prediction, seed, max_batches=100,
                       passes=3, fill_mask_sentences=300):
    """Held-out masked-token and NSP accuracy next to their baselines.

    The held-out text is read `passes` times, each pass with its own
    pairs, random B segments and masks (seeded, so every run and model is
    scored on the same ones): a small held-out split then still gives
    thousands of masked tokens and hundreds of sentence pairs.

    Returns `evaluate_pretraining`'s dict, plus `most_frequent_token`,
    `fill_mask_examples` (five held-out sentences with one word masked, to
    print) and `fill_mask_summary` (`fill_mask_summary` over the first
    `fill_mask_sentences` such sentences, the printed five among them:
    five alone are a small sample).
    """
    pairs = pair_dataset(corpus, tokenizer, sequence_length, "heldout",
                         next_sentence_prediction, seed=seed + 1,
                         repeat=False)
    for draw in range(2, passes + 1):
        pairs = pairs.concatenate(pair_dataset(
            corpus, tokenizer, sequence_length, "heldout",
            next_sentence_prediction, seed=seed + draw, repeat=False))
    heldout = batch_pairs(
        pairs, tokenizer, sequence_length, batch_size,
        next_sentence_prediction, shuffle_buffer_size=0,
        drop_remainder=False, seed=seed + 1,
    )
    tokenized = tokenize_documents(corpus.documents("train"), tokenizer)
    counts = unigram_counts(
        (ids for document in tokenized for ids in document),
        tokenizer.vocabulary_size(),
        [tokenizer.cls_token_id, tokenizer.sep_token_id,
         tokenizer.pad_token_id],
    )
    results = evaluate_pretraining(model, heldout, counts, max_batches)
    results["most_frequent_token"] = tokenizer.id_to_token(
        int(counts.argmax()))
    examples = fill_mask_examples(
        model, tokenizer, corpus.documents("heldout"),
        count=fill_mask_sentences, seed=seed, counts=counts)
    results["fill_mask_examples"] = examples[:5]
    if examples:
        results["fill_mask_summary"] = fill_mask_summary(examples)
    return results


def evaluation_model(model, engine):
    """The model (and engine) to evaluate `model` trained under `engine`.

    `tf.distribute` runs `predict_on_batch` on every replica with the whole
    batch (and concatenates the copies), so on TensorFlow a single-device
    copy of the weights evaluates. JAX's engines evaluate in place.
    """
    if engine is None or keras.config.backend() != "tensorflow":
        return model, engine
    copy = type(model).from_config(model.get_config())
    copy.set_weights(model.get_weights())
    return copy, None


def write_evaluation(path, results, timings):
    with open(path, "w") as file:
        json.dump({**results, "timings": timings}, file, indent=2)


def write_final_model(model, tokenizer, output_dir, title, results=None):
    """Writes the preset `output_dir/model` and `loss_curves.png`.

    Returns:
        True when the plot was written (it needs matplotlib and logs).
    """
    save_to_preset(model, os.path.join(output_dir, "model"),
                   tokenizer=tokenizer)
    baselines = {"nsp_accuracy": 0.5}
    if results:
        baselines.update(mlm_loss=results["unigram_loss"],
                         mlm_accuracy=results["unigram_accuracy"])
    metrics = os.path.join(output_dir, "metrics.jsonl")
    if not os.path.exists(metrics):
        return False
    return plot_loss_curves(
        read_metrics(metrics), os.path.join(output_dir, "loss_curves.png"),
        title=title, baselines=baselines,
    )
