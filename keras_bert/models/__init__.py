"""Functional BERT models: the backbone and the task models built on it."""

from keras_bert.models.bert_backbone import BertBackbone
from keras_bert.models.bert_pretrainer import BertPretrainer
from keras_bert.models.task import Task
