"""Evaluation scores for the fine-tuning tasks (plain NumPy/Python).

SQuAD v1.1 exact match/F1 with the official normalization, entity-level
F1 for IOB1/IOB2 tagging, accuracy/F1 for classification and
correlations for regression. One Keras metric lives here too,
`sparse_logits_accuracy.SparseLogitsAccuracy` (the masked-LM accuracy of
pretraining); it is imported from its module, or as
`keras_bert.SparseLogitsAccuracy`, so that these scores load without Keras.
"""

from keras_bert.metrics.classification import classification_scores
from keras_bert.metrics.classification import regression_scores
from keras_bert.metrics.entity_f1 import entity_scores
from keras_bert.metrics.entity_f1 import get_entities
from keras_bert.metrics.squad import exact_match_score
from keras_bert.metrics.squad import f1_score
from keras_bert.metrics.squad import normalize_answer
from keras_bert.metrics.squad import squad_scores
