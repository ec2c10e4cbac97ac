"""Keras losses of keras_bert's tasks (Keras only)."""

from keras_bert.losses.multiple_negatives_ranking_loss import (
    MultipleNegativesRankingLoss,
)
from keras_bert.losses.sparse_logits_crossentropy import (
    SparseLogitsCrossentropy,
)
