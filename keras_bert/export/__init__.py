"""Export for serving: TF SavedModel (strings in) and ONNX (packed ints).

See docs/export.md. Both work from every Keras backend: under JAX or
PyTorch the model is rebuilt in a TensorFlow subprocess
(`keras_bert.export.tensorflow_route`).
"""

from keras_bert.export.onnx_export import export_onnx
from keras_bert.export.saved_model_export import export_saved_model
