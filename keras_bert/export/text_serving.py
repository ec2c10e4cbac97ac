"""Strings in, named outputs out: tokenization, packing and model in a graph.

Each model takes raw text (batched, any batch size), tokenizes it
with the model's `BertTokenizer`, packs it with dynamic padding (rows are
padded to the longest row of the request, never past `sequence_length`)
and returns `packed_serving.packed_outputs` plus what only the text can
give: character offsets of tokens, and the answer text for QA. Offsets are
Unicode code points into the request string (invalid UTF-8 sequences count
as one character each, as the tokenizer sees them). The model's task
record gives the input names and how many there may be (`text_inputs`,
`text_input_counts`), how they are packed (`packed_layout`) and what
comes out (`serving_outputs`).
"""

import collections
import re

import tensorflow as tf

from keras_bert.export.packed_serving import packed_outputs
from keras_bert.preprocessing import bert_text_ops
from keras_bert.preprocessing.bert_packer import BertPacker
from keras_bert.preprocessing.bert_tokenizer import BertTokenizer

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")

TextSettings = collections.namedtuple(
    "TextSettings",
    ["tokenizer", "sequence_length", "truncate", "max_query_length"],
)


def text_settings(model, preprocessor=None, sequence_length=None):
    """Tokenizer and packing settings, from `preprocessor` or the model's.

    Args:
        model: the backbone or task model.
        preprocessor: optional `BertTokenizer` or a preprocessor with a
            `tokenizer` (and possibly `sequence_length`, `truncate`,
            `max_query_length`); default: `model.preprocessor`.
        sequence_length: int. Overrides the preprocessor's; defaults to it,
            else to the backbone's `max_sequence_length`.
    """
    preprocessor = preprocessor or getattr(model, "preprocessor", None)
    if preprocessor is None:
        raise ValueError(
            f"The {type(model).__name__} has no preprocessor, so its text "
            "cannot be tokenized in the graph. Pass preprocessor= (a "
            "BertPreprocessor or BertTokenizer, e.g. "
            "BertPreprocessor.from_preset(dir)), or export only the packed "
            "int inputs with include_preprocessing=False."
        )
    tokenizer = preprocessor if isinstance(preprocessor, BertTokenizer) else (
        getattr(preprocessor, "tokenizer", None))
    if not isinstance(tokenizer, BertTokenizer):
        raise TypeError(
            "preprocessor must be a BertTokenizer or have a BertTokenizer "
            f"`tokenizer`; got {type(preprocessor).__name__}."
        )
    limit = getattr(model, "backbone", model).max_sequence_length
    length = (sequence_length or getattr(preprocessor, "sequence_length", None)
              or limit)
    if not 3 <= length <= limit:
        raise ValueError(
            f"sequence_length={length} must be between 3 and the model's "
            f"max_sequence_length={limit}."
        )
    max_query_length = getattr(preprocessor, "max_query_length",
                               min(64, (length - 3) // 2))
    if length - max_query_length - 3 < 1:
        raise ValueError(
            f"sequence_length={length} leaves no room for a context after "
            f"a question of max_query_length={max_query_length}."
        )
    return TextSettings(
        tokenizer=tokenizer,
        sequence_length=length,
        truncate=getattr(preprocessor, "truncate", "longest_first"),
        max_query_length=max_query_length,
    )


def text_input_names(record, text_inputs=None):
    """Validated names of the string inputs (a tuple)."""
    if text_inputs is None:
        return record.text_inputs
    names = (text_inputs,) if isinstance(text_inputs, str) else tuple(
        text_inputs)
    counts = record.text_input_counts
    if len(names) not in counts:
        raise ValueError(
            f"A {record.name} takes {' or '.join(map(str, counts))} "
            f"text inputs; got text_inputs={list(names)} (default: "
            f"{list(record.text_inputs)})."
        )
    bad = [name for name in names if not _NAME.match(str(name))]
    if bad or len(set(names)) != len(names):
        raise ValueError(
            f"text_inputs must be distinct names of letters, digits and "
            f"underscores, starting with a letter; got {list(names)}."
        )
    return names


def text_input_signature(model, record, names):
    """`tf.TensorSpec`s of the string inputs (variable batch)."""
    shapes = [[None]] * len(names)
    if record.packed_layout == "choices":
        shapes = [[None], [None, model.num_choices]]
    return {name: tf.TensorSpec(shape, tf.string, name=name)
            for name, shape in zip(names, shapes)}


def _pack(settings, segments, truncate=None):
    """Packs token-id segments with dynamic padding to the longest row."""
    packer = BertPacker.from_tokenizer(
        settings.tokenizer,
        sequence_length=settings.sequence_length,
        truncate=truncate or settings.truncate,
        dynamic_padding=True,
    )
    packed = packer(segments)
    # An empty batch packs to width 0, which the model cannot slice its
    # [CLS] position from; two padding columns give it empty outputs.
    room = tf.maximum(2 - tf.shape(packed["token_ids"])[1], 0)
    return {name: tf.pad(value, [[0, 0], [0, room]])
            for name, value in packed.items()}


def _at_packed_positions(values, first_position, width, keep):
    """Per-token values of a ragged `[batch, (tokens)]` at packed positions.

    Token `k` of a row sits at packed position `first_position + k`;
    positions where `keep` is False get -1.
    """
    dense = tf.cast(values.to_tensor(-1), tf.int32)
    # A trailing -1 column keeps the gather valid for rows without tokens.
    dense = tf.pad(dense, [[0, 0], [0, 1]], constant_values=-1)
    index = tf.range(width)[tf.newaxis] - first_position[:, tf.newaxis]
    index = tf.clip_by_value(index, 0, tf.shape(dense)[1] - 1)
    return tf.where(keep, tf.gather(dense, index, batch_dims=1), -1)


def _real_positions(packed):
    """(width, positions [1, width], real token count [batch])."""
    width = tf.shape(packed["token_ids"])[1]
    length = tf.reduce_sum(tf.cast(packed["padding_mask"] > 0, tf.int32), 1)
    return width, tf.range(width)[tf.newaxis], length


def _sequence_outputs(model, record, texts, settings, options):
    tokenizer = settings.tokenizer
    packed = _pack(settings, tuple(tokenizer(text) for text in texts))
    outputs = packed_outputs(model, record, packed, **options)
    if record.serving_outputs == "encoder":
        outputs["token_ids"] = packed["token_ids"]
        outputs["padding_mask"] = packed["padding_mask"]
    return outputs


def _tag_outputs(model, record, texts, settings, options):
    tokenizer = settings.tokenizer
    token_ids, starts, ends = tokenizer.tokenize_with_offsets(texts[0])
    packed = _pack(settings, token_ids)
    outputs = packed_outputs(model, record, packed, **options)
    width, positions, length = _real_positions(packed)
    is_text = (positions >= 1) & (positions < length[:, tf.newaxis] - 1)
    first = tf.ones_like(length)
    continuation = tf.constant(
        [token.startswith("##") for token in tokenizer.get_vocabulary()])
    outputs.update(
        token_ids=packed["token_ids"],
        padding_mask=packed["padding_mask"],
        token_starts=_at_packed_positions(starts, first, width, is_text),
        token_ends=_at_packed_positions(ends, first, width, is_text),
        word_starts=tf.cast(
            is_text & ~tf.gather(continuation, packed["token_ids"]), tf.int32),
        tag_ids=tf.where(is_text, outputs["tag_ids"], -1),
    )
    if "tags" in outputs:
        outputs["tags"] = tf.where(is_text, outputs["tags"], "")
    return outputs


def _span_outputs(model, record, texts, settings, options):
    tokenizer = settings.tokenizer
    question, context = texts
    question_ids = tokenizer(question)[:, : settings.max_query_length]
    context_ids, starts, ends = tokenizer.tokenize_with_offsets(context)
    # The question (already capped) first, then as much context as fits:
    # the first window of `BertQuestionAnswererPreprocessor`.
    packed = _pack(settings, (question_ids, context_ids),
                   truncate="waterfall")
    outputs = packed_outputs(model, record, packed, **options)
    width, positions, length = _real_positions(packed)
    in_context = (packed["segment_ids"] == 1) & (
        positions < length[:, tf.newaxis] - 1)
    context_start = tf.argmax(packed["segment_ids"], axis=1,
                              output_type=tf.int32)
    token_starts = _at_packed_positions(starts, context_start, width,
                                        in_context)
    token_ends = _at_packed_positions(ends, context_start, width, in_context)
    has_answer = outputs["start_index"] > 0
    answer_start = tf.where(has_answer, tf.gather(
        token_starts, outputs["start_index"], batch_dims=1), -1)
    answer_end = tf.where(has_answer, tf.gather(
        token_ends, outputs["end_index"], batch_dims=1), -1)
    # Offsets count an invalid UTF-8 sequence as one character, which is
    # what sanitizing turns it into.
    answer = tf.strings.substr(
        bert_text_ops.sanitize_utf8(context),
        tf.maximum(answer_start, 0),
        tf.maximum(answer_end - answer_start, 0),
        unit="UTF8_CHAR",
    )
    outputs.update(
        token_ids=packed["token_ids"],
        padding_mask=packed["padding_mask"],
        answer=answer,
        answer_start=answer_start,
        answer_end=answer_end,
    )
    return outputs


def _choice_outputs(model, record, texts, settings, options):
    tokenizer = settings.tokenizer
    prompts, choices = texts
    num_choices = model.num_choices
    packed = _pack(settings, (
        tokenizer(tf.repeat(prompts, num_choices)),
        tokenizer(tf.reshape(choices, [-1])),
    ))
    packed = {
        name: tf.reshape(value, [-1, num_choices, tf.shape(value)[-1]])
        for name, value in packed.items()
    }
    return packed_outputs(model, record, packed, **options)


def text_outputs(model, record, texts, settings, label_names=None,
                 max_answer_length=30, jit_compile=False):
    """Named outputs for a tuple of string tensors, in `text_inputs` order."""
    options = {"label_names": label_names,
               "max_answer_length": max_answer_length,
               "jit_compile": jit_compile}
    if record.packed_layout == "choices":
        outputs = _choice_outputs
    else:
        # Per-token tags and answer spans point into the text too.
        outputs = {"tags": _tag_outputs, "spans": _span_outputs}.get(
            record.serving_outputs, _sequence_outputs)
    return outputs(model, record, texts, settings, options)
