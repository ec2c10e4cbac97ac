"""Task preprocessing for fine-tuning: token tagging, extractive QA,
multiple choice, sentence embeddings and reranking, data-file readers,
and the `tf.data` feeding of raw input.

Sentence and sentence-pair classification use
`keras_bert.BertPreprocessor` directly.
"""

from keras_bert.preprocessing.tasks.answer_spans import best_answer_spans
from keras_bert.preprocessing.tasks.bert_cross_encoder_preprocessor import (
    BertCrossEncoderPreprocessor,
)
from keras_bert.preprocessing.tasks.bert_multiple_choice_preprocessor import (
    BertMultipleChoicePreprocessor,
)
from keras_bert.preprocessing.tasks.bert_question_answerer_preprocessor import (
    BertQuestionAnswererPreprocessor,
)
from keras_bert.preprocessing.tasks.bert_text_embedder_preprocessor import (
    BertTextEmbedderPreprocessor,
)
from keras_bert.preprocessing.tasks.bert_token_classifier_preprocessor import (
    BertTokenClassifierPreprocessor,
)
from keras_bert.preprocessing.tasks.readers import DataFileError
from keras_bert.preprocessing.tasks.readers import read_conll
from keras_bert.preprocessing.tasks.readers import read_squad
from keras_bert.preprocessing.tasks.readers import read_table
from keras_bert.preprocessing.tasks.readers import table_rows
from keras_bert.preprocessing.tasks.task_dataset import preprocessed_dataset
