"""BERT building blocks: Keras layers written with `keras.ops` only."""

from keras_bert.layers.activations import get_activation
from keras_bert.layers.bert_embeddings import BertEmbeddings
from keras_bert.layers.multi_head_self_attention import MultiHeadSelfAttention
from keras_bert.layers.transformer_encoder_block import TransformerEncoderBlock
from keras_bert.layers.masked_lm_head import MaskedLMHead
from keras_bert.layers.sentence_pooling import SentencePooling
