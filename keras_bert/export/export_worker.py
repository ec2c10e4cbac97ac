"""The TensorFlow side of `tensorflow_route`: registers the model's task,
rebuilds the preset and runs the export it was asked for.

    KERAS_BACKEND=tensorflow python -m keras_bert.export.export_worker REQUEST.json
"""

import json
import sys

import keras

from keras_bert.checkpoints import load_preset_model
from keras_bert.export.onnx_export import export_onnx
from keras_bert.export.saved_model_export import export_saved_model
from keras_bert.serialization import deserialize
from keras_bert.tasks.registry import load_class
from keras_bert.tasks.registry import register_task
from keras_bert.tasks.task_record import TaskRecord


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if keras.config.backend() != "tensorflow":
        raise SystemExit("Run with KERAS_BACKEND=tensorflow.")
    with open(argv[0], encoding="utf-8") as f:
        request = json.load(f)
    record = register_task(TaskRecord.from_dict(request["task"]))
    # Keras finds a class by its registration, which its module makes: a
    # task the caller registered is imported here as it was there.
    for path in (record.model_class, record.preprocessor_class):
        if path:
            load_class(path)
    model = load_preset_model(request["preset"])
    preprocessor = request["preprocessor"]
    if preprocessor is not None:
        preprocessor = deserialize(preprocessor)
    options = dict(request["options"], overwrite=request["overwrite"],
                   verbose=False)
    if request["artifact"] == "saved_model":
        export_saved_model(model, request["path"], preprocessor=preprocessor,
                           **options)
    else:
        export_onnx(model, request["path"], **options)


if __name__ == "__main__":
    main()
