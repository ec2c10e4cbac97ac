"""Task preprocessing for fine-tuning: token tagging, extractive QA,
multiple choice, sentence embeddings and reranking, data-file readers,
and the `tf.data` feeding of raw input.

Sentence and sentence-pair classification use
`keras_bert.BertPreprocessor` directly.
"""

from keras_bert.lazy_exports import lazy_exports

# Exported name -> the module that defines it, imported on first use.
_EXPORTS = {
    "best_answer_spans": "answer_spans",
    "BertCrossEncoderPreprocessor": "bert_cross_encoder_preprocessor",
    "BertMultipleChoicePreprocessor": "bert_multiple_choice_preprocessor",
    "BertQuestionAnswererPreprocessor": "bert_question_answerer_preprocessor",
    "BertTextEmbedderPreprocessor": "bert_text_embedder_preprocessor",
    "BertTokenClassifierPreprocessor": "bert_token_classifier_preprocessor",
    "DataFileError": "readers",
    "read_conll": "readers",
    "read_squad": "readers",
    "read_table": "readers",
    "table_rows": "readers",
    "preprocessed_dataset": "task_dataset",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
