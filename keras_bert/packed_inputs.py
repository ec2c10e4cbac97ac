"""The names of the packed inputs every BERT model takes.

`BertPacker` writes them, the backbone and the tasks declare them as
their `keras.Input`s, bucketed inference and the padding cut slice them
along the sequence, and an export's `serving_packed` signature takes them.
"""

# Each is int32 of shape (batch, sequence) (multiple choice: (batch,
# choices, sequence)): the WordPiece ids, 0 for sentence A and 1 for B,
# and 1 for a real token, 0 for padding.
PACKED_INPUTS = ("token_ids", "segment_ids", "padding_mask")
