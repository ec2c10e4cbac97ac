"""FLOPs of a BERT forward pass, and the GEMM ceiling they are divided by.

`encoder_forward_flops` is the count of docs/performance.md ("What is
counted"); `gemm_callable` runs one layer's four weight GEMMs alone in
NumPy, PyTorch, JAX or TensorFlow, and the fastest library sets the
ceiling that `bench.bench_inference` divides each model's FLOP rate by.
"""


def layer_gemm_shapes(tokens, hidden, intermediate):
    """(m, k, n) of the four weight GEMMs of one encoder layer."""
    return [
        (tokens, hidden, 3 * hidden),  # fused query/key/value
        (tokens, hidden, hidden),  # attention output
        (tokens, hidden, intermediate),  # feed-forward in
        (tokens, intermediate, hidden),  # feed-forward out
    ]


def gemm_flops(shapes):
    return sum(2 * m * k * n for m, k, n in shapes)


def encoder_forward_flops(config, batch, length):
    """Multiply-add FLOPs (2 per MAC) of a BERT forward pass.

    Per layer, with T = batch * length tokens, H hidden, I intermediate:
    `2T(4H^2 + 2HI)` for the dense projections plus `4 batch L^2 H` for
    the two attention products (QK^T and PV); plus `2 batch H^2` for the
    pooler. LayerNorm, softmax, GELU, embeddings are left out: they are
    O(T H) and memory bound.
    """
    hidden = config["hidden_size"]
    intermediate = config["intermediate_size"]
    tokens = batch * length
    per_layer = gemm_flops(layer_gemm_shapes(tokens, hidden, intermediate))
    per_layer += 4 * batch * length * length * hidden
    return config["num_hidden_layers"] * per_layer + 2 * batch * hidden**2


# GEMM ceiling ------------------------------------------------------------


def gemm_callable(library, dtype, tokens, hidden, intermediate):
    """One layer's four weight GEMMs (`layer_gemm_shapes`) in `library`."""
    import numpy as np

    shapes = layer_gemm_shapes(tokens, hidden, intermediate)
    rng = np.random.default_rng(0)
    pairs = [(rng.standard_normal((m, k)).astype("float32"),
              rng.standard_normal((k, n)).astype("float32"))
             for m, k, n in shapes]
    if dtype == "int8":
        return _int8_gemm_callable(library, shapes)
    if library == "numpy":
        if dtype != "float32":
            raise ValueError("NumPy has no fast bfloat16 GEMM")
        return lambda: [a @ b for a, b in pairs]
    if library in ("torch", "onednn"):
        import torch

        dt = getattr(torch, dtype)
        pairs = [(torch.from_numpy(a).to(dt), torch.from_numpy(b).to(dt))
                 for a, b in pairs]
        if library == "onednn":
            # PyTorch's oneDNN linear kernel (keras_bert's float32 inference
            # path on the CPU), where `@` is PyTorch's `mm` (MKL for
            # float32): the weight as a transposed (n, k) view.
            linear = torch.ops.mkldnn._linear_pointwise
            product = lambda a, b: linear(a, b.t(), None, "none", [], "")
        else:
            product = lambda a, b: a @ b

        def run():
            with torch.inference_mode():
                return [product(a, b) for a, b in pairs]

        return run
    if library == "jax":
        import jax
        import jax.numpy as jnp

        pairs = [(jnp.asarray(a, dtype), jnp.asarray(b, dtype))
                 for a, b in pairs]
        fn = jax.jit(lambda ps: [a @ b for a, b in ps])
        return lambda: jax.block_until_ready(fn(pairs))
    if library in ("tensorflow", "tensorflow+xla"):
        import tensorflow as tf

        pairs = [(tf.cast(a, dtype), tf.cast(b, dtype)) for a, b in pairs]
        if library == "tensorflow":
            return lambda: [tf.matmul(a, b).numpy() for a, b in pairs]
        # The products as XLA compiles them, as keras_bert's models run.
        products = tf.function(lambda ps: [a @ b for a, b in ps],
                               jit_compile=True)
        return lambda: [p.numpy() for p in products(pairs)]
    raise ValueError(f"unknown GEMM library {library!r}")


def _int8_gemm_callable(library, shapes):
    """int8 x int8 -> int32 GEMMs, each library's fastest public route."""
    import numpy as np

    rng = np.random.default_rng(0)
    pairs = [(rng.integers(-127, 128, (m, k)).astype("int8"),
              rng.integers(-127, 128, (k, n)).astype("int8"))
             for m, k, n in shapes]
    if library == "torch":
        import torch

        pairs = [(torch.from_numpy(a), torch.from_numpy(b)) for a, b in pairs]
        return lambda: [torch._int_mm(a, b) for a, b in pairs]
    if library == "jax":
        import jax
        import jax.numpy as jnp

        fn = jax.jit(lambda ps: [
            jnp.matmul(a, b, preferred_element_type=jnp.int32)
            for a, b in ps])
        pairs = [(jnp.asarray(a), jnp.asarray(b)) for a, b in pairs]
        return lambda: jax.block_until_ready(fn(pairs))
    if library == "tensorflow":
        import tensorflow as tf

        fn = tf.function(lambda ps: [
            tf.matmul(a, b, output_type=tf.int32) for a, b in ps],
            jit_compile=True)
        pairs = [(tf.constant(a), tf.constant(b)) for a, b in pairs]
        return lambda: [c.numpy() for c in fn(pairs)]
    raise ValueError(f"no int8 GEMM for {library!r}")
