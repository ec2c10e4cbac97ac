"""A serving process: runs exported SavedModels with TensorFlow alone.

    python serving_client.py JOBS.pkl OUTPUTS.pkl [--without-keras]

JOBS.pkl holds `{job: (saved_model_dir, signature, {input: array})}`;
OUTPUTS.pkl gets `{job: {output: array}}`. keras_bert is made unimportable
before anything else, so a SavedModel that needed it would fail to load.
By default the process imports `tensorflow` and `tensorflow_text` (which
registers the text ops); with `--without-keras`, Keras is made unimportable
too and only tensorflow-text's compiled op libraries are loaded, as a C++
server would link them.
"""

import glob
import importlib.util
import os
import pickle
import sys


def _load_text_ops_without_python_package(tf):
    spec = importlib.util.find_spec("tensorflow_text")
    ops_dir = os.path.join(os.path.dirname(spec.origin), "python", "ops")
    for library in sorted(glob.glob(os.path.join(ops_dir, "_*.so"))):
        tf.load_op_library(library)


def main(jobs_file, outputs_file, without_keras=False):
    sys.modules["keras_bert"] = None
    if without_keras:
        sys.modules["keras"] = None
    import tensorflow as tf

    if without_keras:
        _load_text_ops_without_python_package(tf)
    else:
        import tensorflow_text  # noqa: F401  (registers the text ops)

    with open(jobs_file, "rb") as f:
        jobs = pickle.load(f)
    loaded, results = {}, {}
    for job, (directory, signature, inputs) in jobs.items():
        if directory not in loaded:
            loaded[directory] = tf.saved_model.load(directory)
        function = loaded[directory].signatures[signature]
        outputs = function(**{
            name: tf.constant(value, tf.string if value.dtype == object
                              else None)
            for name, value in inputs.items()
        })
        results[job] = {name: value.numpy() for name, value in outputs.items()}
    imported = sorted(name for name in sys.modules
                      if name.split(".")[0] == "keras_bert"
                      and sys.modules[name] is not None)
    results["__modules__"] = {
        "keras_bert": imported,
        "keras_imported": sys.modules.get("keras") is not None,
    }
    with open(outputs_file, "wb") as f:
        pickle.dump(results, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], without_keras="--without-keras" in sys.argv)
