"""keras_bert's one boundary to framework internals.

keras_bert runs on Keras' public API, except where that API has no way to
do something a BERT model needs fast or at all. Every such reach into a
private name of Keras, TensorFlow or PyTorch (a `keras.src` import, an
underscored attribute or method, a private torch op) lives in this
package and nowhere else; `tests/test_import_graph.py` fails on a
`keras.src` import outside it. Each function here:

* names what it reaches and why no public route does the same;
* says on which releases it was checked (the floors in
  `constraints-floors.txt` and the newest in CI);
* probes for what it reaches and, when the probe fails (a release renamed
  or removed it), takes a public fallback: slower, or with a documented
  difference, never an error at import.

Modules, one concern each:

* `layer_tracking`: a layer's nested layers; preprocessing layers that
  take strings.
* `sublayer_call`: a sub-layer called without Keras' per-call work on
  PyTorch, where that work changes nothing.
* `model_compile`: XLA for "auto" on TensorFlow; the saved
  `jit_compile`; a training step's state built before tracing.
* `optimizer_state`: Adam's moment slots; the per-step update hook.
* `weights_only`: a model's weights without its optimizer's.
* `torch_ops`: PyTorch's private kernels (oneDNN's linear, `_int_mm`,
  the multi-tensor `_foreach` ops, `torch._dynamo`).
* `torch_int8_kernels`: faster kernels for Keras' int8 products on
  PyTorch, only while keras_bert's own quantized layers run.
* `process_exit`: the `atexit` functions run before the `keras-bert`
  program ends without the interpreter's teardown (CPython's, not a
  framework's).
"""
