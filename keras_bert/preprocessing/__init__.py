"""Tokenization and in-graph preprocessing for BERT (TensorFlow graph code)."""

from keras_bert.preprocessing.bert_tokenizer import BertTokenizer
from keras_bert.preprocessing.bert_packer import BertPacker
from keras_bert.preprocessing.bert_preprocessor import BertPreprocessor
from keras_bert.preprocessing.bert_masked_lm_preprocessor import (
    BertMaskedLMPreprocessor,
)
from keras_bert.preprocessing.masked_lm_masker import MaskedLMMasker
from keras_bert.preprocessing.preprocessor import Preprocessor
from keras_bert.preprocessing.prefetch_for_fit import prefetch_for_fit
from keras_bert.preprocessing.next_sentence_pair_builder import (
    NextSentencePairBuilder,
)
from keras_bert.preprocessing.text_documents import read_documents
from keras_bert.preprocessing.text_documents import split_sentences
from keras_bert.preprocessing.train_vocabulary import train_vocabulary
