"""The same BERT in PyTorch's own encoder layer, for the PyTorch ceiling.

`torch.nn.TransformerEncoderLayer` (post-norm, GELU, batch first) holds
BERT's block exactly; in `eval()` without gradients PyTorch runs it on its
fused inference kernel (`torch._transformer_encoder_layer_fwd`: the QKV
projection, SDPA, output projection with the residual, LayerNorms and the
feed-forward pair in one C++ call per layer, no Python between kernels).
What that kernel reaches is what PyTorch's eager kernels can do on these
shapes; `bench.bench_inference --torch-ceiling` times it beside keras_bert
and transformers, eager and `torch.compile`d.

The weights are the all-MiniLM-L6-v2 folder's, loaded through
transformers (its embeddings run as they are); `forward` checks the
output against transformers' before timing anything.
"""

from bench import common


def encoder_from(model):
    """`nn.TransformerEncoder` with the blocks of a transformers `BertModel`."""
    import torch

    config = model.config
    layers = []
    for block in model.encoder.layer:
        attention = block.attention
        layer = torch.nn.TransformerEncoderLayer(
            config.hidden_size, config.num_attention_heads,
            dim_feedforward=config.intermediate_size, dropout=0.0,
            activation="gelu", layer_norm_eps=config.layer_norm_eps,
            batch_first=True, norm_first=False)
        projections = (attention.self.query, attention.self.key,
                       attention.self.value)
        with torch.no_grad():
            layer.self_attn.in_proj_weight.copy_(
                torch.cat([p.weight for p in projections]))
            layer.self_attn.in_proj_bias.copy_(
                torch.cat([p.bias for p in projections]))
            pairs = (
                (layer.self_attn.out_proj, attention.output.dense),
                (layer.norm1, attention.output.LayerNorm),
                (layer.linear1, block.intermediate.dense),
                (layer.linear2, block.output.dense),
                (layer.norm2, block.output.LayerNorm),
            )
            for ours, theirs in pairs:
                ours.weight.copy_(theirs.weight)
                ours.bias.copy_(theirs.bias)
        layers.append(layer)
    return torch.nn.Sequential(*layers).eval()


class TorchEncoderRuntime:
    def __init__(self):
        self.models = {}

    def forward(self, case):
        import torch
        import transformers

        if case["dtype"] != "float32":
            raise ValueError("the PyTorch encoder row is float32 only")
        if "reference" not in self.models:
            self.models["reference"] = transformers.BertModel.from_pretrained(
                common.minilm_dir(), local_files_only=True,
                dtype=torch.float32).eval()
            self.models["encoder"] = encoder_from(self.models["reference"])
        reference, encoder = self.models["reference"], self.models["encoder"]
        ids = common.synthetic_inputs(case["batch"], case["length"],
                                      reference.config.vocab_size)
        token_ids = torch.from_numpy(ids["token_ids"]).long()
        segment_ids = torch.from_numpy(ids["segment_ids"]).long()

        def run():
            with torch.inference_mode():
                return encoder(reference.embeddings(
                    input_ids=token_ids, token_type_ids=segment_ids))

        with torch.inference_mode():
            expected = reference(input_ids=token_ids,
                                 token_type_ids=segment_ids).last_hidden_state
            error = float((run() - expected).abs().max())
        if error > 1e-4:
            raise AssertionError(
                f"PyTorch's encoder differs from transformers by {error}")
        return run
