"""keras_bert: BERT for Keras 3 on TensorFlow, JAX and PyTorch."""

from keras_bert import layers
from keras_bert.configs import BACKBONE_CONFIGS
from keras_bert.models.bert_backbone import BertBackbone
from keras_bert.models.bert_pretrainer import BertPretrainer
from keras_bert.version import __version__
