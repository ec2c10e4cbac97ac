"""What each exported model returns, computed from packed int tensors.

The SavedModel signatures and the ONNX graph call the Keras model on
`token_ids`, `segment_ids` and `padding_mask` and turn its raw output into
named tensors a client can use directly (probabilities, label ids, answer
spans). This is TensorFlow graph code: it runs under the TensorFlow backend
only (other backends get there through `tensorflow_route`).
"""

import tensorflow as tf

from keras_bert.packed_inputs import PACKED_INPUTS


def packed_input_signature(model, record):
    """`tf.TensorSpec`s of the packed inputs: variable batch and length."""
    shape = ([None, model.num_choices, None]
             if record.packed_layout == "choices" else [None, None])
    return {name: tf.TensorSpec(shape, tf.int32, name=name)
            for name in PACKED_INPUTS}


def _label_strings(label_ids, label_names):
    # Index 0 of the table is "" so that an id of -1 (no label) maps to it.
    table = tf.constant([""] + list(label_names))
    return tf.gather(table, label_ids + 1)


def _class_outputs(logits, label_names):
    if logits.shape[-1] == 1:  # a regressor (num_classes=1)
        return {"logits": logits, "scores": logits[:, 0]}
    label_ids = tf.argmax(logits, axis=-1, output_type=tf.int32)
    outputs = {
        "logits": logits,
        "probabilities": tf.nn.softmax(logits, axis=-1),
        "label_ids": label_ids,
    }
    if label_names:
        outputs["labels"] = _label_strings(label_ids, label_names)
    return outputs


def _tag_outputs(logits, padding_mask, label_names):
    tag_ids = tf.argmax(logits, axis=-1, output_type=tf.int32)
    outputs = {
        "logits": logits,
        "probabilities": tf.nn.softmax(logits, axis=-1),
        "tag_ids": tf.where(padding_mask > 0, tag_ids, -1),
    }
    if label_names:
        outputs["tags"] = _label_strings(outputs["tag_ids"], label_names)
    return outputs


def best_spans(logits, segment_ids, padding_mask, max_answer_length):
    """The highest-scoring answer span inside the second segment.

    A span `[start, end]` is valid when both ends are tokens of the second
    segment (the context, final [SEP] excluded), `end >= start` and it has
    at most `max_answer_length` tokens; its score is the sum of the start
    and end logits. Every pair is scored, which is exact (SQuAD's n-best
    search only keeps the top starts and ends). Rows without a valid span
    (an empty context) point at [CLS]: start = end = 0, score 0.
    """
    start_logits, end_logits = logits[..., 0], logits[..., 1]
    length = tf.shape(logits)[1]
    positions = tf.range(length)
    real_length = tf.reduce_sum(tf.cast(padding_mask > 0, tf.int32), axis=1)
    in_context = (segment_ids == 1) & (
        positions[tf.newaxis] < real_length[:, tf.newaxis] - 1
    )
    starts, ends = positions[:, tf.newaxis], positions[tf.newaxis, :]
    ordered = (ends >= starts) & (ends - starts < max_answer_length)
    valid = (in_context[:, :, tf.newaxis] & in_context[:, tf.newaxis, :]
             & ordered[tf.newaxis])
    scores = start_logits[:, :, tf.newaxis] + end_logits[:, tf.newaxis, :]
    scores = tf.where(valid, scores, tf.constant(-float("inf"), scores.dtype))
    best = tf.argmax(tf.reshape(scores, [tf.shape(logits)[0], -1]), axis=-1,
                     output_type=tf.int32)
    has_span = tf.reduce_any(valid, axis=[1, 2])
    start = tf.where(has_span, best // length, 0)
    end = tf.where(has_span, best % length, 0)
    score = tf.gather(start_logits, start, batch_dims=1) + tf.gather(
        end_logits, end, batch_dims=1)
    return {
        "start_logits": start_logits,
        "end_logits": end_logits,
        "start_index": start,
        "end_index": end,
        "span_score": tf.where(has_span, score, tf.zeros_like(score)),
    }


def packed_outputs(model, record, inputs, label_names=None,
                   max_answer_length=30, jit_compile=False):
    """Runs `model` on packed `inputs` and returns its named outputs.

    Args:
        model: the Keras model (TensorFlow backend).
        record: its task record (`export_record`): `serving_outputs`
            says what the raw output is turned into.
        inputs: dict of int32 tensors named as in `PACKED_INPUTS`.
        label_names: optional list of str: adds string `labels` (classes)
            or `tags` (token tags) next to the ids.
        max_answer_length: int. Longest answer span in tokens (QA).
        jit_compile: bool. Run the model as one XLA program (the pre- and
            post-processing around it stay graph ops).
    """
    inputs = {name: tf.cast(inputs[name], tf.int32) for name in PACKED_INPUTS}
    if jit_compile:
        outputs = tf.function(lambda x: model(x, training=False),
                              jit_compile=True)(inputs)
    else:
        outputs = model(inputs, training=False)
    kind = record.serving_outputs
    if kind == "encoder":
        return {
            "sequence_output": outputs["sequence_output"],
            "pooled_output": outputs["pooled_output"],
        }
    outputs = tf.cast(outputs, tf.float32)
    if kind == "embeddings":
        return {"embeddings": outputs}
    if kind == "scores":
        return {"scores": outputs}
    if kind == "classes":
        return _class_outputs(outputs, label_names)
    if kind == "tags":
        return _tag_outputs(outputs, inputs["padding_mask"], label_names)
    return best_spans(outputs, inputs["segment_ids"], inputs["padding_mask"],
                      max_answer_length)
