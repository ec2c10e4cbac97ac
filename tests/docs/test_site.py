"""The documentation site builds in strict mode and documents every name."""

import glob
import os
import re
import shutil
import subprocess
import sys

import pytest

import keras_bert

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))


def _api_directives():
    """Dotted paths of every `::: name` directive in docs/api/."""
    names = set()
    for path in glob.glob(os.path.join(ROOT, "docs", "api", "*.md")):
        with open(path) as file:
            names.update(re.findall(r"^::: ([\w.]+)", file.read(), re.M))
    return names


def _public_names(module):
    names = getattr(module, "__all__", None) or [
        name for name in vars(module) if not name.startswith("_")
    ]
    # Sub-packages are documented through their members.
    return sorted(name for name in names
                  if type(getattr(module, name)).__name__ != "module")


def test_api_reference_covers_every_public_name():
    documented = {path.rsplit(".", 1)[-1] for path in _api_directives()}
    documented |= {"BACKBONE_CONFIGS", "__version__"}  # on the Configs page
    missing = [name for name in _public_names(keras_bert)
               if name not in documented]
    assert not missing, (
        f"public names of keras_bert without an API entry: {missing}. Add "
        "a `::: keras_bert.<module>.<Name>` line to a page in docs/api/."
    )


def test_getting_started_lists_every_command():
    from keras_bert.cli import build_parser

    subparsers = next(action for action in build_parser()._actions
                      if action.dest == "command")
    with open(os.path.join(ROOT, "docs", "getting_started.md")) as file:
        listed = set(re.findall(r"^keras-bert ([\w-]+)", file.read(), re.M))
    missing = sorted(set(subparsers.choices) - listed)
    assert not missing, (
        f"commands missing from docs/getting_started.md: {missing}")


def test_api_reference_covers_subpackages():
    import keras_bert.checkpoints
    import keras_bert.export
    import keras_bert.layers
    import keras_bert.losses
    import keras_bert.metrics
    import keras_bert.optimizers
    import keras_bert.preprocessing
    import keras_bert.preprocessing.tasks
    import keras_bert.tasks
    import keras_bert.training
    import keras_bert.visualization

    documented = {path.rsplit(".", 1)[-1] for path in _api_directives()}
    missing = {
        package.__name__: [n for n in _public_names(package)
                           if n not in documented]
        for package in (keras_bert.checkpoints, keras_bert.export,
                        keras_bert.layers, keras_bert.losses,
                        keras_bert.metrics, keras_bert.optimizers,
                        keras_bert.preprocessing,
                        keras_bert.preprocessing.tasks, keras_bert.tasks,
                        keras_bert.training, keras_bert.visualization)
    }
    missing = {k: v for k, v in missing.items() if v}
    assert not missing, f"names without an API entry: {missing}"


# Written as module paths (for `python -m`, PyTorch-only plumbing, or the
# private boundary to framework internals, which the docs name as
# modules), not as attributes.
_MODULE_PATHS = ("keras_bert.cli", "keras_bert.commands.",
                 "keras_bert.torch_int8", "keras_bert.fused_ops",
                 "keras_bert._compat")

_RESOLVE_SCRIPT = """
import sys
import keras_bert
# The first step of each name before any is taken: resolving one imports
# sub-packages that would then be found as a side effect.
known = set(dir(keras_bert)) | set(vars(keras_bert))
for name in sys.argv[1:]:
    if name.split(".")[1] not in known:
        print(name, "|", "not a name of keras_bert after import")
        continue
    value = keras_bert
    try:
        for part in name.split(".")[1:]:
            value = getattr(value, part)
    except AttributeError as error:
        print(name, "|", error)
"""


def test_every_dotted_name_in_the_docs_resolves_after_import_keras_bert():
    """`keras_bert.training.batch_pairs` in a page works as written: a
    fresh process that ran `import keras_bert` and nothing else reaches it
    attribute by attribute. Left out: the changelog (a history) and the
    API pages, whose `:::` lines are module paths for mkdocstrings."""
    pages = [os.path.join(ROOT, "README.md")] + [
        path for path in glob.glob(os.path.join(ROOT, "docs", "**", "*.md"),
                                   recursive=True)
        if not path.endswith("changelog.md")
        and os.sep + "api" + os.sep not in path]
    names = set()
    for path in pages:
        with open(path) as file:
            names.update(re.findall(r"keras_bert(?:\.\w+)+", file.read()))
    names = sorted(name for name in names
                   if not name.startswith(_MODULE_PATHS))
    result = subprocess.run([sys.executable, "-c", _RESOLVE_SCRIPT, *names],
                            capture_output=True, text=True, timeout=600,
                            cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(names) > 40 and result.stdout == "", (
        "names in the docs that `import keras_bert` does not reach:\n"
        + result.stdout)


@pytest.mark.skipif(shutil.which("mkdocs") is None
                    and not os.path.exists(os.path.join(
                        os.path.dirname(sys.executable), "mkdocs")),
                    reason="mkdocs is not installed (pip install mkdocs "
                    "'mkdocstrings[python]' mkdocs-material)")
def test_site_builds_in_strict_mode(tmp_path):
    mkdocs = shutil.which("mkdocs") or os.path.join(
        os.path.dirname(sys.executable), "mkdocs")
    result = subprocess.run(
        [mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    # The API pages really were generated from the docstrings.
    with open(tmp_path / "site" / "api" / "models" / "index.html") as file:
        html = file.read()
    assert "BertBackbone" in html and "vocabulary_size" in html
