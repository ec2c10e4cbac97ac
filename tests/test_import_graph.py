"""The package's import graph has floors: every import goes down or stays
on its floor, and no module reaches itself through its imports.

Floors, lowest first (docs/architecture.md draws them):

0. shared plumbing: `version`, `configs`, `labels`, `packed_inputs`,
   `serialization`, `file_swap`
1. Keras-only building blocks: `layers`, `optimizers`, `losses`, `metrics`
2. `preprocessing` (TensorFlow graph code)
3. `checkpoints` (reading and writing weights; given the model classes)
4. `models` (they use everything below)
5. `export`, `visualization` (they take models)
6. `training` (pipelines and jobs that build and train models)
7. `commands`, `cli` and the package itself (`keras_bert`, the public
   names the commands use; it imports them lazily)

Imports inside functions are checked too: the only good reason for one is
to keep TensorFlow out of `import keras_bert` under JAX or PyTorch (or out
of `keras-bert --help`), and it says so in a comment on its line or the
line above (the command modules, which all defer their imports for that
reason, say it once in `keras_bert/cli.py`).
"""

import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "keras_bert")
FLOORS = [
    ("keras_bert.version", "keras_bert.configs", "keras_bert.labels",
     "keras_bert.packed_inputs", "keras_bert.serialization",
     "keras_bert.file_swap", "keras_bert.lazy_exports",
     "keras_bert.quantization", "keras_bert.torch_int8",
     "keras_bert.fused_ops"),
    ("keras_bert.layers", "keras_bert.optimizers", "keras_bert.losses",
     "keras_bert.metrics"),
    # Checkpoint files and fetching them by name sit with preprocessing:
    # a tokenizer's `from_preset` reads and fetches them too.
    ("keras_bert.preprocessing", "keras_bert.checkpoints.checkpoint_error",
     "keras_bert.checkpoints.confined_paths",
     "keras_bert.checkpoints.checkpoint_files",
     "keras_bert.checkpoints.weight_files",
     "keras_bert.checkpoints.preset_names",
     "keras_bert.checkpoints.huggingface_hub_download",
     "keras_bert.checkpoints.kaggle_download"),
    ("keras_bert.checkpoints",),
    ("keras_bert.models",),
    ("keras_bert.export", "keras_bert.visualization"),
    ("keras_bert.training",),
    # The package itself is the public API the commands use.
    ("keras_bert.commands", "keras_bert.cli", "keras_bert"),
]


def floor(module):
    best = None
    for level, prefixes in enumerate(FLOORS):
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                if best is None or len(prefix) > best[1]:
                    best = (level, len(prefix))
    return best[0]


def modules():
    found = {}
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                dotted = os.path.relpath(path[:-3], ROOT).replace(os.sep, ".")
                found[dotted.removesuffix(".__init__")] = path
    return found


def imports(path, known):
    """`(target module, line, in a function, source lines)` per import."""
    with open(path) as file:
        source = file.read()
    tree = ast.parse(source)
    function_nodes = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function_nodes.update(id(inner) for inner in ast.walk(node))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            # `from package import submodule` imports the submodule.
            targets = [f"{node.module}.{alias.name}"
                       if f"{node.module}.{alias.name}" in known
                       else node.module for alias in node.names]
        else:
            continue
        for target in targets:
            if target.startswith("keras_bert"):
                found.append((target, node.lineno, id(node) in function_nodes))
    return found, source.splitlines()


GRAPH = {}
DEFERRED = []
for _module, _path in modules().items():
    _found, _lines = imports(_path, modules())
    GRAPH[_module] = {target for target, _, _ in _found}
    for _target, _line, _inside in _found:
        if _inside:
            DEFERRED.append((_module, _target, _line, _lines))


def test_every_import_goes_down_or_stays_on_its_floor():
    upward = sorted(
        f"{module} (floor {floor(module)}) imports {target} "
        f"(floor {floor(target)})"
        for module, targets in GRAPH.items() for target in targets
        if floor(target) > floor(module))
    assert not upward, "\n".join(upward)


def test_no_module_imports_itself_through_others():
    cycles, state = [], {}

    def visit(module, stack):
        state[module] = "open"
        for target in sorted(GRAPH.get(module, ())):
            if target == module:
                continue
            if state.get(target) == "open":
                cycles.append(stack[stack.index(target):] + [target])
            elif target in GRAPH and target not in state:
                visit(target, stack + [target])
        state[module] = "done"

    for module in sorted(GRAPH):
        if module not in state:
            visit(module, [module])
    assert not cycles, "\n".join(" -> ".join(cycle) for cycle in cycles)


@pytest.mark.parametrize(
    "module,target,line,lines",
    [entry for entry in DEFERRED
     if not entry[0].startswith("keras_bert.commands")],
    ids=lambda value: value if isinstance(value, str) else "")
def test_an_import_inside_a_function_says_why(module, target, line, lines):
    nearby = lines[max(0, line - 3):line]
    assert any("#" in text for text in nearby), (
        f"{module}:{line} imports {target} inside a function without a "
        "comment saying why (keep TensorFlow out of `import keras_bert`?)")
