"""transformers' `BertModel`, run as its users run it, for benchmarks.

`TransformersRuntime.forward(case)` loads the all-MiniLM-L6-v2 folder
(`common.minilm_dir`) and returns a callable that runs one eager forward
pass under `torch.inference_mode()` on `common.synthetic_inputs`, the
same ids that `bench.keras_runtime.KerasRuntime` feeds the Keras models.
With `case["variant"] == "compile"` the model is `torch.compile`d first
(its default inductor backend), the transformers counterpart of
keras_bert's `jit_compile=True` on torch.
"""

from bench import common


def dynamic_int8(model):
    """PyTorch's dynamic int8 quantization of every `nn.Linear`: what
    transformers' and sentence-transformers' docs point CPU users to."""
    import torch

    return torch.ao.quantization.quantize_dynamic(
        model, {torch.nn.Linear}, dtype=torch.qint8)


class TransformersRuntime:
    def __init__(self):
        self.models = {}

    def forward(self, case):
        import torch
        import transformers

        dtype, variant = case["dtype"], case.get("variant", "")
        key = (dtype, variant)
        if key not in self.models:
            model = transformers.BertModel.from_pretrained(
                common.minilm_dir(), local_files_only=True,
                dtype=torch.float32 if dtype == "int8" else getattr(
                    torch, dtype)).eval()
            if dtype == "int8":
                model = dynamic_int8(model)
            if variant == "compile":
                model = torch.compile(model)
            self.models[key] = model
        model = self.models[key]
        inputs = common.synthetic_inputs(case["batch"], case["length"],
                                  model.config.vocab_size)
        inputs = {
            "input_ids": torch.from_numpy(inputs["token_ids"]).long(),
            "token_type_ids": torch.from_numpy(inputs["segment_ids"]).long(),
            "attention_mask": torch.from_numpy(inputs["padding_mask"]).long(),
        }

        def run():
            with torch.inference_mode():
                return model(**inputs).last_hidden_state

        return run
