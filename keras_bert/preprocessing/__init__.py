"""Tokenization and in-graph preprocessing for BERT (TensorFlow graph code)."""

from keras_bert.lazy_exports import lazy_exports

# Exported name -> the module that defines it, imported on first use.
_EXPORTS = {
    "BertTokenizer": "bert_tokenizer",
    "BertPacker": "bert_packer",
    "BertPreprocessor": "bert_preprocessor",
    "BertMaskedLMPreprocessor": "bert_masked_lm_preprocessor",
    "MaskedLMMasker": "masked_lm_masker",
    "Preprocessor": "preprocessor",
    "prefetch_for_fit": "prefetch_for_fit",
    "NextSentencePairBuilder": "next_sentence_pair_builder",
    "read_documents": "text_documents",
    "split_sentences": "text_documents",
    "train_vocabulary": "train_vocabulary",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
