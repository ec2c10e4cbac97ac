"""`--precision`: the commands that run a model can run it in bfloat16 or
int8 (docs/guides/faster_inference.md says where each pays off).

`predict`, `evaluate` and `embed` add the flag (importing no Keras, so
`--help` answers without loading a backend); `load_overrides` and
`apply_precision` load the model in it.
"""

PRECISIONS = ("float32", "bfloat16", "int8")


def add_precision_argument(parser):
    parser.add_argument(
        "--precision", choices=PRECISIONS, default="float32",
        help="run the model in bfloat16 (weights and compute) or int8 "
        "(Keras' int8 quantization of every GEMM, done at load time); "
        "faster on CPUs with avx512_bf16 / AMX or VNNI units. Default: "
        "float32")


def load_overrides(precision):
    """`BertBackbone` arguments to load a model in `precision` with (an
    int8 model loads in float32 and is quantized by `apply_precision`)."""
    return {"dtype": "bfloat16"} if precision == "bfloat16" else {}


def apply_precision(model, precision):
    """`model`, quantized when `precision` is int8."""
    if precision == "int8":
        model.quantize("int8")
    return model
