import os

import keras

from keras_bert.export import export_paths
from keras_bert.export import tensorflow_route
from keras_bert.export.model_kinds import export_record
from keras_bert.models.label_names import served_label_names
from keras_bert.quantization import is_quantized


def export_saved_model(
    model,
    path,
    include_preprocessing=True,
    overwrite=False,
    preprocessor=None,
    text_inputs=None,
    sequence_length=None,
    label_names=None,
    max_answer_length=30,
    jit_compile="auto",
    verbose=True,
):
    """Writes a TensorFlow SavedModel for serving (TF Serving, `tf.saved_model`).

    Signatures (see docs/export.md for every output):

    * `serving_default`: raw strings in (one input per text: `text`, or
      two names given as `text_inputs` for pairs; `question`/`context`
      for QA;
      `prompt`/`choices` for multiple choice), batched with any batch size.
      Tokenization, packing (dynamic padding, truncation to
      `sequence_length`) and the model are one graph. Without
      `include_preprocessing` it is the packed signature below.
    * `serving_packed`: int32 `token_ids`, `segment_ids`, `padding_mask`,
      shape `(batch, length)` (`(batch, num_choices, length)` for multiple
      choice), both dimensions variable.

    Outputs are named: `probabilities`, `label_ids` (classifiers),
    `tag_ids` (token classifier), `start_index`/`end_index`/`answer` (QA),
    `pooled_output`/`sequence_output` (backbone), `embeddings` (text
    embedder: one float32 vector per string), `scores` (cross-encoder,
    inputs `query`/`passage`), and more.

    Under JAX or PyTorch the model is saved as a keras_bert preset (Keras
    config + weights) in a temporary directory and a
    `KERAS_BACKEND=tensorflow` subprocess rebuilds it and writes the
    SavedModel, so the same call works from every backend.

    The SavedModel is written into a temporary sibling of `path` and renamed
    into place when complete: a failed export leaves no partial directory.

    Args:
        model: a `BertBackbone` or a task model (`BertClassifier`,
            `BertTokenClassifier`, `BertQuestionAnswerer`,
            `BertMultipleChoice`, `BertTextEmbedder`, `BertCrossEncoder`,
            or a registered task: its record in `keras_bert.tasks` gives
            the signatures).
        path: str. The SavedModel directory to create.
        include_preprocessing: bool. Strings in (True) or packed ints only.
        overwrite: bool. Replace an existing SavedModel at `path`.
        preprocessor: a `BertPreprocessor` (or any preprocessor with a
            `tokenizer`) or a `BertTokenizer`; default `model.preprocessor`.
            Needed for a backbone or a task built without one.
        text_inputs: str or tuple of str. Names of the string inputs, e.g.
            `("premise", "hypothesis")` for a pair classifier. Default
            `("text",)`; QA and multiple choice take exactly two.
        sequence_length: int. Longest packed sequence; default the
            preprocessor's, else the backbone's `max_sequence_length`.
        label_names: list of str. Class (or tag) names: adds a string
            `labels` (or `tags`) output. Default: the model's own
            `label_names` when it has them.
        max_answer_length: int. Longest QA answer, in tokens.
        jit_compile: bool or "auto". Save the model's part of each
            signature as one XLA program. "auto" compiles quantized models
            only: Keras' int8 matmuls are several times faster under XLA
            than as TensorFlow graph ops (docs/performance.md), while a
            float model gains little and XLA compiles once per batch and
            length it is served with (the first request of each shape
            waits for it).
        verbose: bool. Print where the SavedModel was written.

    Example:
    >>> keras_bert.export_saved_model(classifier, "exported/sst2/1",
    ...     label_names=["negative", "positive"])  # doctest: +SKIP
    >>> import tensorflow as tf, tensorflow_text  # in the serving process
    >>> serve = tf.saved_model.load("exported/sst2/1").signatures[
    ...     "serving_default"]  # doctest: +SKIP
    >>> serve(text=tf.constant(["a gripping film"]))["labels"]  # doctest: +SKIP
    """
    path = os.fspath(path)
    record = export_record(model)
    export_paths.check_target(path, overwrite, export_paths.SAVED_MODEL)
    options = {
        "include_preprocessing": include_preprocessing,
        "text_inputs": text_inputs,
        "sequence_length": sequence_length,
        "label_names": served_label_names(model, label_names),
        "max_answer_length": max_answer_length,
        "jit_compile": (is_quantized(model) if jit_compile == "auto"
                        else bool(jit_compile)),
    }
    if include_preprocessing:
        # Check the text settings here, before any subprocess is started.
        from keras_bert.export import text_serving  # TensorFlow code

        text_serving.text_input_names(record, text_inputs)
        text_serving.text_settings(model, preprocessor, sequence_length)
    if keras.config.backend() != "tensorflow":
        tensorflow_route.export_in_tensorflow(
            "saved_model", model, path, overwrite, preprocessor, options)
    else:
        _write_saved_model(model, record, path, overwrite, preprocessor,
                           **options)
    if verbose:
        print(f"Saved a SavedModel to '{path}' (signatures: serving_default, "
              "serving_packed).")
    return path


def _write_saved_model(model, record, path, overwrite, preprocessor,
                       include_preprocessing, text_inputs, sequence_length,
                       label_names, max_answer_length, jit_compile):
    # TensorFlow code: imported when a model is exported, so that
    # `import keras_bert.export` under JAX or PyTorch does not load it.
    from keras_bert.export import packed_serving
    from keras_bert.export import text_serving

    outputs_options = {"label_names": label_names,
                       "max_answer_length": max_answer_length,
                       "jit_compile": jit_compile}
    archive = keras.export.ExportArchive()
    archive.track(model)

    packed_spec = packed_serving.packed_input_signature(model, record)

    def serve_packed(inputs):
        return packed_serving.packed_outputs(model, record, inputs,
                                             **outputs_options)

    packed_fn = archive.add_endpoint("serving_packed", serve_packed,
                                     input_signature=[packed_spec])
    if include_preprocessing:
        settings = text_serving.text_settings(model, preprocessor,
                                              sequence_length)
        names = text_serving.text_input_names(record, text_inputs)
        text_spec = text_serving.text_input_signature(model, record, names)

        def serve_text(inputs):
            texts = tuple(inputs[name] for name in names)
            return text_serving.text_outputs(model, record, texts, settings,
                                             **outputs_options)

        archive.add_endpoint("serving_default", serve_text,
                             input_signature=[text_spec])
    else:
        archive.add_endpoint("serving_default", packed_fn)
    with export_paths.staged_output(path, overwrite,
                                    export_paths.SAVED_MODEL) as staging:
        archive.write_out(staging, verbose=False)
