"""The task registry: keras_bert's own records keep every public name (the
`--task` values, the export kinds, the Hugging Face classes), lookups find
a class's record through its bases, and a bad or clashing record is
refused with the field that is wrong."""

import dataclasses
import json

import pytest

import keras_bert
from keras_bert.tasks import CommandTask
from keras_bert.tasks import HuggingFaceClass
from keras_bert.tasks import TaskRecord
from keras_bert.tasks import command_names
from keras_bert.tasks import find_command
from keras_bert.tasks import record_of_architecture
from keras_bert.tasks import record_of_class
from keras_bert.tasks import register_task
from keras_bert.tasks import record_named
from keras_bert.tasks import task_records
from keras_bert.tasks import unregister_task
from keras_bert.tasks.builtin_tasks import BUILTIN_TASKS
from keras_bert.tasks.registry import load_class


def test_builtin_records_keep_the_public_names():
    assert command_names()[:6] == ("classify", "pair", "regress", "ner",
                                   "squad", "choice")
    exported = [record.name for record in BUILTIN_TASKS
                if record.serving_outputs is not None]
    assert exported == ["backbone", "classifier", "token_classifier",
                        "question_answerer", "multiple_choice",
                        "text_embedder", "cross_encoder"]
    assert {record.name: [hf.name for hf in record.huggingface_classes]
            for record in BUILTIN_TASKS} == {
        "backbone": ["BertModel"],
        "pretrainer": ["BertForPreTraining", "BertForMaskedLM"],
        "classifier": ["BertForSequenceClassification"],
        "token_classifier": ["BertForTokenClassification"],
        "question_answerer": ["BertForQuestionAnswering"],
        "multiple_choice": ["BertForMultipleChoice"],
        "text_embedder": [],
        "cross_encoder": ["BertForSequenceClassification"],
    }
    assert task_records()[:len(BUILTIN_TASKS)] == BUILTIN_TASKS


@pytest.mark.parametrize("record", BUILTIN_TASKS, ids=lambda r: r.name)
def test_builtin_classes_are_public_and_find_their_record(record):
    model_class = load_class(record.model_class)
    assert getattr(keras_bert, record.class_name) is model_class
    assert record_of_class(model_class) is record
    preprocessor = record.preprocessor_class.rsplit(".", 1)[-1]
    assert getattr(keras_bert, preprocessor) is load_class(
        record.preprocessor_class)


def test_a_subclass_shares_its_bases_record():
    class Reranker(keras_bert.BertCrossEncoder):
        pass

    assert record_of_class(Reranker) is record_named("cross_encoder")
    assert record_of_class(dict) is None


def test_lookups_by_command_and_architecture():
    record, command = find_command("squad")
    assert record.name == "question_answerer"
    assert command.sequence_length == 384
    # A fine-tuned sequence classifier runs as the classifier, which has
    # commands, not as the cross-encoder written the same way.
    assert record_of_architecture(
        "BertForSequenceClassification").name == "classifier"
    assert record_of_architecture("BertModel") is None
    with pytest.raises(KeyError, match="classify, pair"):
        find_command("summarize")


def test_a_saved_model_runs_as_its_default_command():
    classifier = record_named("classifier")
    assert classifier.default_command().name == "classify"
    assert classifier.default_command(regressor=True).name == "regress"
    assert record_named("token_classifier").default_command(
        regressor=True).name == "ner"
    assert record_named("text_embedder").default_command() is None


@pytest.mark.parametrize("record", BUILTIN_TASKS, ids=lambda r: r.name)
def test_a_record_survives_json(record):
    # The export's TensorFlow subprocess gets the record this way.
    config = json.loads(json.dumps(dataclasses.asdict(record)))
    assert TaskRecord.from_dict(config) == record


def test_registering_again_changes_nothing_and_clashes_are_refused():
    record = TaskRecord(
        name="topic", model_class="my_package.topic.TopicClassifier",
        commands=(CommandTask("topic", inputs="text", labels="classes",
                              monitor="accuracy"),))
    register_task(record)
    try:
        assert register_task(record) is record
        assert command_names()[-1] == "topic"
        with pytest.raises(ValueError, match="the name 'topic'"):
            register_task(dataclasses.replace(record, heads={"a": "b"}))
        with pytest.raises(ValueError, match="--task classify"):
            register_task(dataclasses.replace(
                record, name="other", model_class="my_package.Other",
                commands=(dataclasses.replace(record.commands[0],
                                              name="classify"),)))
    finally:
        unregister_task("topic")
    assert "topic" not in command_names()
    with pytest.raises(KeyError, match="No task named 'topic'"):
        unregister_task("topic")


def test_bad_fields_are_named():
    with pytest.raises(ValueError, match="inputs='table'"):
        CommandTask("x", inputs="table", labels="classes", monitor="f1")
    with pytest.raises(ValueError, match="serving_outputs='logits'"):
        TaskRecord(name="x", model_class="m.X", serving_outputs="logits")
    with pytest.raises(ValueError, match="packed_layout='grid'"):
        TaskRecord(name="x", model_class="m.X", packed_layout="grid")
    with pytest.raises(ValueError, match=r"heads \['x_head'\]"):
        TaskRecord(name="x", model_class="m.X", huggingface_classes=(
            HuggingFaceClass("BertForX", heads=("x_head",)),))
