"""The records of keras_bert's own models (`keras_bert.tasks.registry`
registers them).

Each public model class and its preprocessor are named here and nowhere
else: `keras_bert`'s public names, the classes Keras finds on load, the
`--task` values, the export kinds and the Hugging Face classes and head
weights all come from these records.
"""

from keras_bert.tasks.command_task import CommandTask
from keras_bert.tasks.huggingface_class import HuggingFaceClass
from keras_bert.tasks.task_record import TaskRecord

_MODELS = "keras_bert.models"
_PREPROCESSING = "keras_bert.preprocessing"
_TASK_PREPROCESSING = "keras_bert.preprocessing.tasks"
_BERT_PREPROCESSOR = f"{_PREPROCESSING}.bert_preprocessor.BertPreprocessor"

BUILTIN_TASKS = (
    TaskRecord(
        name="backbone",
        model_class=f"{_MODELS}.bert_backbone.BertBackbone",
        preprocessor_class=_BERT_PREPROCESSOR,
        huggingface_classes=(HuggingFaceClass("BertModel"),),
        text_input_counts=(1, 2),
        serving_outputs="encoder",
    ),
    TaskRecord(
        name="pretrainer",
        model_class=f"{_MODELS}.bert_pretrainer.BertPretrainer",
        preprocessor_class=(f"{_PREPROCESSING}.bert_masked_lm_preprocessor."
                            "BertMaskedLMPreprocessor"),
        heads={"mlm_head": "cls.predictions",
               "nsp_head": "cls.seq_relationship"},
        huggingface_classes=(
            HuggingFaceClass("BertForPreTraining",
                             heads=("mlm_head", "nsp_head")),
            # Without next-sentence prediction (RoBERTa-style).
            HuggingFaceClass("BertForMaskedLM", heads=("mlm_head",),
                             pooler=False),
        ),
    ),
    TaskRecord(
        name="classifier",
        model_class=f"{_MODELS}.bert_classifier.BertClassifier",
        preprocessor_class=_BERT_PREPROCESSOR,
        commands=(
            CommandTask("classify", inputs="text", labels="classes",
                        monitor="accuracy"),
            CommandTask("pair", inputs="pair", labels="classes",
                        monitor="accuracy"),
            # num_classes=1.
            CommandTask("regress", inputs="text_or_pair", labels="number",
                        monitor="pearson"),
        ),
        heads={"classifier_head": "classifier"},
        huggingface_classes=(HuggingFaceClass(
            "BertForSequenceClassification", heads=("classifier_head",),
            id2label=True),),
        text_input_counts=(1, 2),
        serving_outputs="classes",
    ),
    TaskRecord(
        name="token_classifier",
        model_class=f"{_MODELS}.bert_token_classifier.BertTokenClassifier",
        preprocessor_class=(f"{_TASK_PREPROCESSING}."
                            "bert_token_classifier_preprocessor."
                            "BertTokenClassifierPreprocessor"),
        commands=(CommandTask("ner", inputs="words", labels="tags",
                              monitor="f1"),),
        heads={"token_classifier_head": "classifier"},
        huggingface_classes=(HuggingFaceClass(
            "BertForTokenClassification", heads=("token_classifier_head",),
            pooler=False, id2label=True),),
        serving_outputs="tags",
    ),
    TaskRecord(
        name="question_answerer",
        model_class=f"{_MODELS}.bert_question_answerer.BertQuestionAnswerer",
        preprocessor_class=(f"{_TASK_PREPROCESSING}."
                            "bert_question_answerer_preprocessor."
                            "BertQuestionAnswererPreprocessor"),
        commands=(CommandTask("squad", inputs="question_context",
                              labels="span", monitor="f1",
                              sequence_length=384),),
        heads={"qa_head": "qa_outputs"},
        # transformers names the two span logits LABEL_0 and LABEL_1.
        huggingface_classes=(HuggingFaceClass(
            "BertForQuestionAnswering", heads=("qa_head",), pooler=False,
            id2label=True),),
        text_inputs=("question", "context"),
        text_input_counts=(2,),
        serving_outputs="spans",
    ),
    TaskRecord(
        name="multiple_choice",
        model_class=f"{_MODELS}.bert_multiple_choice.BertMultipleChoice",
        preprocessor_class=(f"{_TASK_PREPROCESSING}."
                            "bert_multiple_choice_preprocessor."
                            "BertMultipleChoicePreprocessor"),
        commands=(CommandTask("choice", inputs="prompt_choices",
                              labels="choice", monitor="accuracy"),),
        # Its Dense(1) head scores each choice, as transformers' does.
        heads={"classifier_head": "classifier"},
        huggingface_classes=(HuggingFaceClass(
            "BertForMultipleChoice", heads=("classifier_head",)),),
        text_inputs=("prompt", "choices"),
        text_input_counts=(2,),
        packed_layout="choices",
        serving_outputs="classes",
    ),
    TaskRecord(
        name="text_embedder",
        model_class=f"{_MODELS}.bert_text_embedder.BertTextEmbedder",
        preprocessor_class=(f"{_TASK_PREPROCESSING}."
                            "bert_text_embedder_preprocessor."
                            "BertTextEmbedderPreprocessor"),
        serving_outputs="embeddings",
    ),
    TaskRecord(
        name="cross_encoder",
        model_class=f"{_MODELS}.bert_cross_encoder.BertCrossEncoder",
        preprocessor_class=(f"{_TASK_PREPROCESSING}."
                            "bert_cross_encoder_preprocessor."
                            "BertCrossEncoderPreprocessor"),
        heads={"classifier_head": "classifier"},
        # A one-label sequence classifier, as cross-encoder checkpoints are.
        huggingface_classes=(HuggingFaceClass(
            "BertForSequenceClassification", heads=("classifier_head",),
            id2label=True),),
        text_inputs=("query", "passage"),
        text_input_counts=(2,),
        serving_outputs="scores",
    ),
)
