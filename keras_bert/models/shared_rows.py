"""Inference with several short texts sharing one row (no padding between).

Length buckets (`bucketed_inference.py`) still pad each text to its
bucket (docs/retrieval.md has by how much). Here texts are laid
end to end in rows of one fixed length, each with its own positions
(0, 1, ...) and attending only to its own tokens, so a row does the work
of its texts' real tokens plus a short tail, and every call has the same
shape. A text's vectors are those it gets alone: attention across texts
is masked out (exactly zero weight), positions restart per text.
"""

import numpy as np
from keras import ops

from keras_bert.models.bucketed_inference import predict_batch
from keras_bert.models.bucketed_inference import resolve_bucket_lengths
from keras_bert.models.encoder_stack import run_encoder
from keras_bert.torch_int8 import use_fast_torch_int8

# Texts one row may hold: the pooling output has this many slots a row.
MAX_TEXTS_PER_ROW = 16
# Rows are at least this long, so that short texts fill them with little
# left over. Longer rows cost attention per token (it grows with the row):
# on SST-2 sentences rows of 64 encoded faster than rows of 128
# (docs/retrieval.md).
MIN_ROW_LENGTH = 64


def plan_rows(lengths, row_length, max_texts=MAX_TEXTS_PER_ROW):
    """Which texts go in which row: a list of lists of text indices.

    Best fit, longest first: each text goes to the open row it fills
    most tightly, or starts a new row; a row closes at `max_texts`. Rows
    are kept by the room they have left (at most `row_length + 1` lists),
    so a text costs at most `row_length` steps. On 512 SST-2 sentences
    this fills 111 rows of 64 where taking the longest text left and then
    the shortest ones filled 120 (110 at best). Every length must be at
    most `row_length`.
    """
    rows = []
    open_rows = [[] for _ in range(row_length + 1)]
    for text in np.argsort(-np.asarray(lengths), kind="stable"):
        need = int(lengths[text])
        room = next((room for room in range(need, row_length + 1)
                     if open_rows[room]), None)
        if room is None:
            row, room = len(rows), row_length
            rows.append([])
        else:
            row = open_rows[room].pop()
        rows[row].append(text)
        if len(rows[row]) < max_texts:
            open_rows[room - need].append(row)
    return rows


def row_inputs(token_ids, lengths, rows, row_length):
    """The model inputs of `rows` (from `plan_rows`): `token_ids`,
    `segment_ids` (0), `position_ids` and `text_numbers` (1 for a row's
    first text, 2 for its second..., 0 after the last), each
    `(len(rows), row_length)` int32."""
    shape = (len(rows), row_length)
    x = {key: np.zeros(shape, "int32") for key in
         ("token_ids", "segment_ids", "position_ids", "text_numbers")}
    for r, row in enumerate(rows):
        start = 0
        for number, text in enumerate(row, 1):
            end = start + lengths[text]
            x["token_ids"][r, start:end] = token_ids[text, :lengths[text]]
            x["position_ids"][r, start:end] = np.arange(lengths[text])
            x["text_numbers"][r, start:end] = number
            start = end
    return x


def shared_row_output(backbone, inputs, training=False):
    """The backbone's last-layer token vectors for rows of `row_inputs`."""
    numbers = inputs["text_numbers"]
    # A query sees the keys of its own text only; padding (0) sees none.
    attention_mask = ops.logical_and(
        ops.expand_dims(numbers, 2) == ops.expand_dims(numbers, 1),
        ops.expand_dims(numbers, 1) > 0)
    # The backbone's layers run here, not in its call: a quantized one's
    # int8 kernels are entered as its call would.
    with use_fast_torch_int8(backbone):
        return run_encoder(
            (backbone.embeddings, backbone.transformer_layers,
             backbone.final_layer_norm),
            inputs["token_ids"], inputs["segment_ids"],
            position_ids=inputs["position_ids"],
            attention_mask=attention_mask, training=training)[0]


def predict_shared_rows(model, x, batch_size=32, bucket_lengths=None,
                        progress=None):
    """`model`'s per-text outputs `(num_texts, dim)`, in input order.

    `x` is a packed batch (`token_ids`, `padding_mask`, one text a row,
    real tokens first); `model` maps `row_inputs` dicts to
    `(rows, MAX_TEXTS_PER_ROW, dim)`. The row length is the shortest of
    `bucket_lengths` (None: `default_bucket_lengths` of the backbone's
    positions, as in `predict_bucketed`) holding the longest text and at
    least `MIN_ROW_LENGTH` (that length itself when none does): positions
    restart with each text, so a row may be longer than the model's
    positions. A call takes
    the power-of-two number of rows that holds at least `batch_size`
    texts on average (fewer, larger calls: faster than rounding down,
    docs/retrieval.md); the last rows go in halving calls, so no call
    runs empty rows and compiled backends see few shapes.
    """
    token_ids = np.asarray(ops.convert_to_numpy(x["token_ids"]))
    lengths = np.sum(np.asarray(ops.convert_to_numpy(x["padding_mask"]))
                     != 0, axis=1)
    bucket_lengths = resolve_bucket_lengths(model, bucket_lengths)
    shortest = max(MIN_ROW_LENGTH, int(lengths.max()))
    row_length = min([b for b in bucket_lengths if b >= shortest],
                     default=shortest)
    rows = plan_rows(lengths, row_length)
    texts_per_row = len(lengths) / len(rows)
    per_call = 1 << int(np.ceil(np.log2(max(1.0,
                                            batch_size / texts_per_row))))
    results = None
    # Whole calls of `per_call` rows, then one halving call per set bit.
    calls = len(rows) // per_call + bin(len(rows) % per_call).count("1")
    start = 0
    while start < len(rows):
        while per_call > len(rows) - start:
            per_call //= 2
        batch = rows[start:start + per_call]
        outputs = np.asarray(predict_batch(
            model, row_inputs(token_ids, lengths, batch, row_length),
            calls))
        if results is None:
            results = np.zeros((len(lengths), outputs.shape[-1]),
                               outputs.dtype)
        for r, row in enumerate(batch):
            results[row] = outputs[r, :len(row)]
        if progress is not None:
            progress.add(sum(len(row) for row in batch))
        start += per_call
    return results
