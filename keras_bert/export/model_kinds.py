"""Which export recipe a model gets, decided by its class (no TF needed)."""

from keras_bert.models.bert_backbone import BertBackbone
from keras_bert.models.bert_classifier import BertClassifier
from keras_bert.models.bert_cross_encoder import BertCrossEncoder
from keras_bert.models.bert_multiple_choice import BertMultipleChoice
from keras_bert.models.bert_question_answerer import BertQuestionAnswerer
from keras_bert.models.bert_text_embedder import BertTextEmbedder
from keras_bert.models.bert_token_classifier import BertTokenClassifier

_KINDS = (
    (BertBackbone, "backbone"),
    (BertClassifier, "classifier"),
    (BertTokenClassifier, "token_classifier"),
    (BertQuestionAnswerer, "question_answerer"),
    (BertMultipleChoice, "multiple_choice"),
    (BertTextEmbedder, "text_embedder"),
    (BertCrossEncoder, "cross_encoder"),
)


def model_kind(model):
    """"backbone", "classifier", "token_classifier", "question_answerer",
    "multiple_choice", "text_embedder" or "cross_encoder"; a `TypeError`
    naming the supported classes else."""
    for cls, kind in _KINDS:
        if isinstance(model, cls):
            return kind
    names = ", ".join(cls.__name__ for cls, _ in _KINDS)
    raise TypeError(
        f"Cannot export a {type(model).__name__}: export supports {names}. "
        "Export the model's `backbone` for embeddings."
    )
