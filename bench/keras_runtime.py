"""keras_bert and keras-hub, built as their users run them, for benchmarks.

`KerasRuntime.forward(case)` loads the all-MiniLM-L6-v2 folder
(`common.minilm_dir`) into the library the case names, under this
process's Keras backend, and returns a callable that runs one forward
pass on `common.synthetic_inputs`. Used by the benchmark workers
(`bench.bench_inference`, `bench.bench_sst2`) and `bench.profile_forward`.
"""

import contextlib
from unittest import mock

from bench import common


def from_preset_in(cls, preset, dtype, **kwargs):
    """`cls.from_preset` in float32, bfloat16 or int8 (the float32 model,
    quantized as users do it)."""
    model = cls.from_preset(
        preset, dtype="float32" if dtype == "int8" else dtype, **kwargs)
    if dtype == "int8":
        model.quantize("int8")
    return model


def allow_torch_recompiles():
    """Lets dynamo compile many models in one worker process.

    Keras compiles every model's step from the same code object, and dynamo
    caches per code object: past its default limit (8 entries: a static and
    a dynamic-shape graph per model) it silently runs the rest eagerly.
    """
    import torch._dynamo

    torch._dynamo.config.recompile_limit = 256
    torch._dynamo.config.accumulated_recompile_limit = 4096


class KerasRuntime:
    """keras_bert and keras-hub models under this process's Keras backend."""

    def __init__(self):
        self.models = {}

    def model(self, library, dtype, jit_compile, fused=False):
        key = (library, dtype, jit_compile, fused)
        if key not in self.models:
            if library == "keras_bert":
                import keras_bert

                cls = keras_bert.BertBackbone
            else:
                import keras_hub

                cls = keras_hub.models.BertBackbone
            model = from_preset_in(cls, common.minilm_dir(), dtype)
            if jit_compile is not None:
                model.jit_compile = jit_compile
            if fused:  # the earlier releases' attention, for comparison
                # (on PyTorch, `forward` swaps in the earlier kernels)
                for block in model.transformer_layers:
                    block.attention._explicit_is_faster = lambda: False
            self.models[key] = model
        return self.models[key]

    def forward(self, case):
        import keras

        library, variant = case["library"], case.get("variant", "")
        backend = keras.config.backend()
        # keras_bert's best settings: XLA wherever Keras can compile.
        if library == "keras_bert":
            jit = (backend != "torch" or variant == "compile") and (
                variant != "noxla")
        else:
            jit = True if variant == "xla" else None  # None: library default
        if backend == "torch" and jit:
            allow_torch_recompiles()
        model = self.model(library, case["dtype"], jit, variant == "fused")
        inputs = common.synthetic_inputs(case["batch"], case["length"],
                                  model.vocabulary_size)
        baseline = {"fused": keras_ops_in_fused_ops,
                    "calls": keras_calls_for_sublayers}.get(variant)
        if baseline is not None and backend == "torch":
            def earlier_release():
                with baseline():
                    return model.predict_on_batch(inputs)

            return earlier_release
        return lambda: model.predict_on_batch(inputs)


@contextlib.contextmanager
def keras_ops_in_fused_ops():
    """keras_bert on PyTorch as earlier releases ran it, for a before/after
    in one process: Keras' `Dense` product (matmul, then the bias added in
    a second pass) and `ops.dot_product_attention` (which copies the heads
    to contiguous memory) instead of `keras_bert.fused_ops`' kernels."""
    from keras import ops

    from keras_bert import fused_ops

    def dense(inputs, kernel, bias):
        return ops.add(ops.matmul(inputs, kernel), bias)

    def attention(query, key, value, mask, scale):
        return ops.dot_product_attention(query, key, value, mask=mask,
                                         scale=scale, flash_attention=False)

    with mock.patch.object(fused_ops, "_torch_dense", dense), \
            mock.patch.object(fused_ops, "_torch_attention", attention):
        yield


def keras_calls_for_sublayers():
    """keras_bert on PyTorch with every sub-layer called through Keras'
    `Layer.__call__`, for a before/after in one process: without
    `keras_bert._compat.sublayer_call`'s direct calls."""
    from keras_bert._compat import sublayer_call

    return mock.patch.object(sublayer_call, "call_adds_nothing",
                             lambda layer, inputs, kwargs: False)
