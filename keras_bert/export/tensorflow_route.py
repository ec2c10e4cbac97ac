"""Exports from JAX or PyTorch by rebuilding the model under TensorFlow.

The SavedModel and ONNX writers trace the model into a TensorFlow graph,
which needs the TensorFlow backend, and Keras fixes its backend once per
process. So the model is saved as a keras_bert preset (its Keras config
and `model.weights.h5`; Keras weights files do not depend on the backend)
in a temporary directory, and

    KERAS_BACKEND=tensorflow python -m keras_bert.export.export_worker REQUEST.json

rebuilds it and runs the same export with the same options. The request
carries the model's task record, so a task registered in this process
(`keras_bert.tasks.register_task`) is known there too. The child
sees no GPU (`CUDA_VISIBLE_DEVICES=""`): exporting is tracing and
serialization, and the parent may hold the accelerator. Nothing but the
export target is written outside the temporary directory.
"""

import dataclasses
import json
import os
import subprocess
import sys
import tempfile

import keras

from keras_bert.checkpoints import save_to_preset
from keras_bert.tasks.registry import record_of_model

_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def export_in_tensorflow(artifact, model, path, overwrite, preprocessor,
                         options):
    """Runs `artifact`'s export ("saved_model" or "onnx") in a TF process.

    Args:
        artifact: "saved_model" or "onnx".
        model: the Keras model (any backend).
        path: str. The export target.
        overwrite: bool. As in the export functions.
        preprocessor: optional preprocessor or tokenizer, passed along as
            its Keras config.
        options: dict of the export function's other (JSON) arguments.
    """
    with tempfile.TemporaryDirectory(prefix="keras_bert_export-") as workdir:
        preset = os.path.join(workdir, "model")
        save_to_preset(model, preset)
        request = {
            "artifact": artifact,
            "preset": preset,
            "task": dataclasses.asdict(record_of_model(model)),
            "path": os.path.abspath(path),
            "overwrite": overwrite,
            "preprocessor": None if preprocessor is None else (
                keras.saving.serialize_keras_object(preprocessor)),
            "options": options,
        }
        request_file = os.path.join(workdir, "request.json")
        with open(request_file, "w", encoding="utf-8") as f:
            json.dump(request, f)
        env = dict(os.environ, KERAS_BACKEND="tensorflow",
                   CUDA_VISIBLE_DEVICES="")
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [_PACKAGE_ROOT, env.get("PYTHONPATH")]))
        result = subprocess.run(
            [sys.executable, "-m", "keras_bert.export.export_worker",
             request_file],
            env=env, capture_output=True, text=True,
        )
    if result.returncode != 0:
        raise RuntimeError(
            f"Exporting {type(model).__name__} to {path} failed in the "
            f"KERAS_BACKEND=tensorflow subprocess (exit code "
            f"{result.returncode}). Its last output:\n"
            f"{result.stderr[-3000:]}"
        )
