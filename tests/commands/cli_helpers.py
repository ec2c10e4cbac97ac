"""What the command tests share: running the CLI, a tiny pretrained preset."""

import contextlib
import io
import os

from keras_bert import cli
from keras_bert.checkpoints import save_to_preset
from keras_bert.models.bert_backbone import BertBackbone
from keras_bert.models.bert_pretrainer import BertPretrainer
from keras_bert.preprocessing import BertTokenizer
from tests.training.toy_corpus import toy_vocabulary


def run_cli(*argv):
    """`keras-bert ARGV...` in this process: (exit status, stdout)."""
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        code = cli.main(list(argv))
    return code, output.getvalue()


def cli_error(*argv):
    """The stderr of `keras-bert ARGV...`, which must fail on bad input:
    exit status 2, one line."""
    errors = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(errors):
        code = cli.main(list(argv))
    assert code == 2, (code, errors.getvalue())
    assert errors.getvalue().count("\n") == 1, errors.getvalue()
    return errors.getvalue()


def write_toy_pretrainer_preset(root):
    """A 1-layer `BertPretrainer` saved with the toy vocabulary in
    `root/model`; returns (preset directory, pretrainer, tokenizer)."""
    tokenizer = BertTokenizer(toy_vocabulary())
    backbone = BertBackbone(
        vocabulary_size=tokenizer.vocabulary_size(), num_layers=1,
        num_heads=2, hidden_dim=16, intermediate_dim=32,
        max_sequence_length=32)
    model = BertPretrainer(backbone)
    preset = os.path.join(root, "model")
    save_to_preset(model, preset, tokenizer=tokenizer)
    return preset, model, tokenizer
