"""One BERT encoder block on PyTorch: its fused kernel against eager forms.

keras_bert's PyTorch inference runs each unpadded block of up to 128
tokens in PyTorch's fused encoder kernel (`torch._transformer_encoder_
layer_fwd`, docs/performance.md "PyTorch's fused encoder kernel"). This
asks whether an eager composition of PyTorch's public and oneDNN ops
would be faster, one block of all-MiniLM-L6-v2's shape (hidden 384, 12
heads, feed-forward 1536, random weights, exact GELU), float32, no
gradients, interleaved in one process (malloc set as keras_bert's CLI
sets it):

* "kernel": the fused kernel, weights as transposed views of Keras'
  `(in, out)` kernels (as keras_bert calls it);
* "addmm+sdpa": `addmm` GEMMs (MKL), SDPA (flash attention on the CPU),
  the residuals added in place, exact GELU;
* "onednn": oneDNN's linear with its epilogues: bias everywhere, GELU
  on the first feed-forward GEMM, the residual on the output and second
  feed-forward GEMMs (`_linear_pointwise` and its `binary` form), with
  weights as transposed views ("onednn-views") or `(out, in)` copies;
* "mkl-packed": MKL GEMMs on weights packed once for the row count
  (`torch.ops.mkl._mkl_linear`, what inductor's freezing emits).

Every form is checked against the kernel before timing.

    .venv/bin/python -m bench.torch_block_forms --shapes 1x8,1x128,8x128,32x128
"""

import argparse
import statistics
import time

from keras_bert.memory import tune_malloc_unless_opted_out

tune_malloc_unless_opted_out()

from bench import common  # noqa: E402
from bench.bench_inference import parse_shapes  # noqa: E402

HIDDEN, HEADS, INTERMEDIATE, EPSILON = 384, 12, 1536, 1e-12


def block_weights(torch):
    generator = torch.Generator().manual_seed(0)

    def weight(*shape, offset=0.0):
        return offset + 0.05 * torch.randn(*shape, generator=generator)

    return {"qkv": weight(HIDDEN, 3 * HIDDEN), "qkv_b": weight(3 * HIDDEN),
            "out": weight(HIDDEN, HIDDEN), "out_b": weight(HIDDEN),
            "gamma1": weight(HIDDEN, offset=1.0), "beta1": weight(HIDDEN),
            "ffn1": weight(HIDDEN, INTERMEDIATE),
            "ffn1_b": weight(INTERMEDIATE),
            "ffn2": weight(INTERMEDIATE, HIDDEN), "ffn2_b": weight(HIDDEN),
            "gamma2": weight(HIDDEN, offset=1.0), "beta2": weight(HIDDEN)}


def forms(torch, w, rows):
    """name -> callable `(batch, length, hidden) -> same`, for `rows`
    tokens a call (MKL's packed weights are packed for a row count)."""
    functional = torch.nn.functional
    linear = torch.ops.mkldnn._linear_pointwise
    kernels = ("qkv", "out", "ffn1", "ffn2")
    views = {name: w[name].t() for name in kernels}
    copies = {name: w[name].t().contiguous() for name in kernels}
    packed = {name: torch.ops.mkl._mkl_reorder_linear_weight(
        copies[name], rows) for name in kernels}

    def attention(qkv, batch, length):
        q, k, v = qkv.view(batch, length, 3, HEADS, -1).permute(
            2, 0, 3, 1, 4)
        return functional.scaled_dot_product_attention(q, k, v).transpose(
            1, 2).reshape(batch * length, HIDDEN)

    def norm(x, index):
        return functional.layer_norm(x, (HIDDEN,), w[f"gamma{index}"],
                                     w[f"beta{index}"], EPSILON)

    def kernel(x):
        return torch._transformer_encoder_layer_fwd(
            x, HIDDEN, HEADS, views["qkv"], w["qkv_b"], views["out"],
            w["out_b"], True, False, EPSILON, w["gamma1"], w["beta1"],
            w["gamma2"], w["beta2"], views["ffn1"], w["ffn1_b"],
            views["ffn2"], w["ffn2_b"], None, None)

    def addmm_sdpa(x):
        batch, length, _ = x.shape
        x = x.reshape(-1, HIDDEN)
        a = attention(torch.addmm(w["qkv_b"], x, w["qkv"]), batch, length)
        h = norm(torch.addmm(w["out_b"], a, w["out"]).add_(x), 1)
        f = functional.gelu(torch.addmm(w["ffn1_b"], h, w["ffn1"]))
        return norm(torch.addmm(w["ffn2_b"], f, w["ffn2"]).add_(h),
                    2).view(batch, length, HIDDEN)

    def onednn(weights):
        def run(x):
            batch, length, _ = x.shape
            x = x.reshape(-1, HIDDEN)
            a = attention(linear(x, weights["qkv"], w["qkv_b"], "none", [],
                                 ""), batch, length)
            h = norm(linear.binary(a, x, weights["out"], w["out_b"], "add"),
                     1)
            f = linear(h, weights["ffn1"], w["ffn1_b"], "gelu", [], "none")
            return norm(linear.binary(f, h, weights["ffn2"], w["ffn2_b"],
                                      "add"), 2).view(batch, length, HIDDEN)
        return run

    def mkl_packed(x):
        batch, length, _ = x.shape

        def gemm(inputs, name):
            return torch.ops.mkl._mkl_linear(inputs, packed[name],
                                             copies[name], w[f"{name}_b"],
                                             rows)

        x = x.reshape(-1, HIDDEN)
        a = attention(gemm(x, "qkv"), batch, length)
        h = norm(gemm(a, "out").add_(x), 1)
        f = functional.gelu(gemm(h, "ffn1"))
        return norm(gemm(f, "ffn2").add_(h), 2).view(batch, length, HIDDEN)

    return {"kernel": kernel, "addmm+sdpa": addmm_sdpa,
            "onednn-views": onednn(views), "onednn": onednn(copies),
            "mkl-packed": mkl_packed}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shapes", default="1x8,1x128,8x128,32x128")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--token-budget", type=int, default=20000,
                        help="calls per round: this over batch x length, "
                        "at least 3")
    args = parser.parse_args()
    import torch

    weights = block_weights(torch)
    print(common.machine_info())
    names = None
    with torch.no_grad():
        for batch, length in parse_shapes(args.shapes):
            x = torch.randn(batch, length, HIDDEN,
                            generator=torch.Generator().manual_seed(1))
            candidates = forms(torch, weights, batch * length)
            expected = candidates["kernel"](x)
            for name, form in candidates.items():
                error = float((form(x) - expected).abs().max())
                if error > 1e-4:
                    raise AssertionError(f"{name} differs from the kernel "
                                         f"by {error}")
            if names is None:
                names = list(candidates)
                print("| batch x length | " + " | ".join(
                    f"{name} ms" for name in names) + " |\n|---|" +
                    "---:|" * len(names))
            calls = max(3, args.token_budget // (batch * length))
            times = {name: [] for name in names}
            for _ in range(args.rounds):
                for name in names:
                    start = time.perf_counter()
                    for _ in range(calls):
                        candidates[name](x)
                    times[name].append((time.perf_counter() - start) / calls)
            print(f"| {batch} x {length} | " + " | ".join(
                f"{1000 * statistics.median(times[name]):.3f}"
                for name in names) + " |", flush=True)


if __name__ == "__main__":
    main()
