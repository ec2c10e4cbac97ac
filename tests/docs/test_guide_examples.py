"""The Python blocks of the guides run as written and print what they say.

A guide listed here is run top to bottom as one script, in a fresh
process under the current backend (in every test pass, or in the one
GUIDES names) and in a temporary folder (so the files
it writes go there). A `print(...)` whose statement ends in a comment
promises that output: `print(x.shape)  # (1, 2)` must print `(1, 2)`
(the promised lines must appear in order; the library's own messages,
such as where an export was saved, may come between them).
"""

import os
import re
import subprocess
import sys

import pytest

from tests.test_case import script_runs_under

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
# Guide -> the test pass that runs it (None: every pass). Each guide runs
# once: what it shows differs per backend only in code that other tests
# check under every backend (the keras-hub conventions in
# tests/models/test_task_presets.py; int8, bfloat16, their saving and
# export in tests/models/test_quantization.py and
# tests/export/test_quantized_export.py), and a guide costs 45-75 s a pass.
GUIDES = {"docs/guides/keras_hub_users.md": "torch",
          "docs/guides/faster_inference.md": "torch"}


def python_blocks(path):
    with open(os.path.join(ROOT, path)) as file:
        text = file.read()
    return re.findall(r"```python\n(.*?)```", text, re.S)


def promised_output(code):
    """The comment ending each print statement, in order."""
    promised, depth, statement = [], 0, None
    for line in code.splitlines():
        if statement is None and line.startswith("print("):
            statement, depth = [], 0
        if statement is None:
            continue
        code_part, _, comment = line.partition("  # ")
        depth += code_part.count("(") - code_part.count(")")
        if depth == 0:
            if comment:
                promised.append(comment.strip())
            statement = None
    return promised


def test_promised_output_parsing():
    code = ('print(a)  # 1\nx = 2  # not a print\nprint(f(\n'
            '    b))  # (1, 3)\nprint(c)\n')
    assert promised_output(code) == ["1", "(1, 3)"]


@pytest.mark.large
@pytest.mark.slow
@pytest.mark.parametrize("guide", [
    pytest.param(guide, marks=script_runs_under(backend) if backend else ())
    for guide, backend in GUIDES.items()])
def test_guide_runs_and_prints_what_it_says(guide, tmp_path):
    blocks = python_blocks(guide)
    script = "\n".join(blocks)
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
        text=True, env={**os.environ, "PYTHONPATH": ROOT})
    assert result.returncode == 0, result.stderr[-3000:]
    printed = iter(result.stdout.splitlines())
    promised = [p for block in blocks for p in promised_output(block)]
    missing = [p for p in promised if not any(line == p for line in printed)]
    assert not missing, (missing, result.stdout[-3000:])


@pytest.mark.large
@pytest.mark.slow
@script_runs_under("tensorflow")
def test_readme_quickstart_runs_by_name(tmp_path):
    """The README's quickstart, as written, from a Hugging Face cache that
    holds the model it names (built here; no network)."""
    from tests.checkpoints.hub_fixtures import add_to_cache
    from tests.checkpoints.reference_checkpoints import MINILM_DIR

    quickstart = python_blocks("README.md")[0]
    cache = str(tmp_path / "hub")
    add_to_cache(cache, "sentence-transformers/all-MiniLM-L6-v2", MINILM_DIR)
    result = subprocess.run(
        [sys.executable, "-c", quickstart], cwd=tmp_path, capture_output=True,
        text=True, env={**os.environ, "PYTHONPATH": ROOT,
                        "HF_HUB_CACHE": cache, "HF_HUB_OFFLINE": "1"})
    assert result.returncode == 0, result.stderr[-3000:]
    printed = result.stdout.splitlines()
    missing = [p for p in promised_output(quickstart) if p not in printed]
    assert not missing, (missing, result.stdout[-3000:])
    assert (tmp_path / "exported" / "sst2" / "1" / "saved_model.pb").exists()
    assert (tmp_path / "hf-out" / "model.safetensors").exists()
