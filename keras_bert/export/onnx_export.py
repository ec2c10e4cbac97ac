import os

import keras
import numpy as np

from keras_bert.export import export_paths
from keras_bert.export import tensorflow_route
from keras_bert.export.model_kinds import export_record
from keras_bert.models.label_names import served_label_names
from keras_bert.packed_inputs import PACKED_INPUTS


def _erfc_handler(ctx, node, name, args):
    """tf2onnx handler: ONNX has `Erf` but no `Erfc`; erfc(x) = 1 - erf(x).

    TensorFlow writes the exact GELU of BERT's feed-forward blocks with
    `Erfc`, which tf2onnx cannot map on its own.
    """
    from tf2onnx import utils

    node.type = "Erf"
    dtype = utils.map_onnx_to_numpy_type(ctx.get_dtype(node.input[0]))
    one = ctx.make_const(utils.make_name(f"{name}_one"), np.array(1, dtype))
    ctx.insert_new_node_on_output(
        "Sub", node.output[0], name=utils.make_name(f"{name}_erfc"),
        inputs=[one.output[0], node.output[0]],
    )


def _name_dynamic_axes(model_proto):
    """Renames the converter's `unk__N` axes to "batch" and "sequence".

    The first variable axis of every input and output is the batch and the
    last one the sequence (the number of choices and classes are fixed).
    """
    for value in list(model_proto.graph.input) + list(
            model_proto.graph.output):
        dims = [dim for dim in value.type.tensor_type.shape.dim
                if not dim.HasField("dim_value")]
        if dims:
            dims[0].dim_param = "batch"
        if len(dims) > 1:
            dims[-1].dim_param = "sequence"


def export_onnx(model, path, overwrite=False, label_names=None,
                max_answer_length=30, opset=None, verbose=True):
    """Writes the model as an ONNX file taking packed int inputs.

    Inputs: int32 `token_ids`, `segment_ids`, `padding_mask` of shape
    `(batch, sequence)` (`(batch, choices, sequence)` for multiple choice),
    both axes dynamic. Outputs: the same named tensors as the SavedModel's
    `serving_packed` signature (`sequence_output`/`pooled_output`,
    `logits`/`probabilities`/`label_ids`, ...). Tokenize on the client with
    `BertTokenizer` (or any WordPiece tokenizer with the same vocabulary).

    The graph is traced under TensorFlow and converted with `tf2onnx`
    (install `tf2onnx` and `onnx`); under JAX or PyTorch the model is
    handed to a TensorFlow subprocess first, as for `export_saved_model`.
    (Keras' own PyTorch exporter cannot trace BERT's LayerNorm with a
    dynamic sequence axis, and its JAX exporter needs `jax2onnx`.)

    Args:
        model: a `BertBackbone` or a task model, in float32.
        path: str. The `.onnx` file to create.
        overwrite: bool. Replace an existing file at `path`.
        label_names: list of str. Adds string `labels`/`tags` outputs
            (default: the model's own `label_names` when it has them).
        max_answer_length: int. Longest QA answer, in tokens.
        opset: int. ONNX opset; the converter's default when None.
        verbose: bool. Print where the file was written.

    Example:
    >>> keras_bert.export_onnx(classifier, "sst2.onnx")  # doctest: +SKIP
    >>> import onnxruntime  # doctest: +SKIP
    >>> session = onnxruntime.InferenceSession("sst2.onnx")  # doctest: +SKIP
    >>> session.run(["probabilities"], packed_int32_arrays)  # doctest: +SKIP
    """
    path = os.fspath(path)
    record = export_record(model)
    export_paths.check_target(path, overwrite, export_paths.ONNX)
    # The Functional models keep the default policy; their layers carry
    # the one they were built with.
    policies = sorted({layer.dtype_policy.name for layer in
                       getattr(model, "backbone", model).layers} - {"float32"})
    if policies:
        raise ValueError(
            f"ONNX export needs a float32 model; this one computes with "
            f"{policies}. Rebuild it in float32 (e.g. `from_preset(..., "
            "dtype='float32')`) and load its weights."
        )
    options = {
        "label_names": served_label_names(model, label_names),
        "max_answer_length": max_answer_length,
        "opset": opset,
    }
    if keras.config.backend() != "tensorflow":
        tensorflow_route.export_in_tensorflow(
            "onnx", model, path, overwrite, None, options)
    else:
        _write_onnx(model, record, path, overwrite, **options)
    if verbose:
        print(f"Saved an ONNX model to '{path}'.")
    return path


def _write_onnx(model, record, path, overwrite, label_names, max_answer_length,
                opset):
    import tensorflow as tf

    try:
        import onnx
        import tf2onnx
    except ImportError as error:
        raise ImportError(
            "ONNX export needs the `tf2onnx` and `onnx` packages: "
            "pip install tf2onnx onnx"
        ) from error
    from keras_bert.export import packed_serving  # TensorFlow code

    specs = packed_serving.packed_input_signature(model, record)
    signature = [specs[name] for name in PACKED_INPUTS]

    @tf.function(input_signature=signature)
    def serve(token_ids, segment_ids, padding_mask):
        inputs = {"token_ids": token_ids, "segment_ids": segment_ids,
                  "padding_mask": padding_mask}
        return packed_serving.packed_outputs(
            model, record, inputs, label_names=label_names,
            max_answer_length=max_answer_length)

    model_proto, _ = tf2onnx.convert.from_function(
        serve, input_signature=signature, opset=opset,
        custom_op_handlers={"Erfc": (_erfc_handler, [])},
    )
    _name_dynamic_axes(model_proto)
    # Unmapped ops are only logged by the converter; fail here instead.
    onnx.checker.check_model(model_proto, full_check=True)
    with export_paths.staged_output(path, overwrite,
                                    export_paths.ONNX) as staged_file:
        onnx.save(model_proto, staged_file)
