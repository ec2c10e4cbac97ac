"""The package's import graph has floors: every import goes down or stays
on its floor, and no module reaches itself through its imports.

Floors, lowest first (docs/architecture.md draws them):

0. shared plumbing: `_compat` (the one boundary to framework internals,
   importing nothing else of keras_bert), `version`, `configs`, `labels`,
   `packed_inputs`, `tasks` (the task records, which name classes by
   dotted path), `serialization`, `file_swap`, `quantization`,
   `torch_int8`, `fused_ops`
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

Framework internals are reached from `keras_bert._compat` only: no other
module imports `keras.src` (or `tensorflow.python`, `jax._src`), reads a
private attribute of `torch`, `tf`, `jax` or `keras`, or uses a private
name that Keras' own source defines, nor overrides a private method of
Keras' base classes.
"""

import ast
import os
import re

import keras
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "keras_bert")
COMPAT = "keras_bert._compat"
FLOORS = [
    (COMPAT, "keras_bert.version", "keras_bert.configs", "keras_bert.labels",
     "keras_bert.packed_inputs", "keras_bert.tasks",
     "keras_bert.serialization",
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


def parse(path):
    with open(path) as file:
        source = file.read()
    return ast.parse(source), source


def imports(path, known):
    """`(target module, line, in a function, source lines)` per import."""
    tree, source = parse(path)
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


def test_compat_imports_nothing_else_of_keras_bert():
    reached = sorted(f"{module} imports {target}"
                     for module, targets in GRAPH.items()
                     if module.startswith(COMPAT) for target in targets
                     if not target.startswith(COMPAT))
    assert not reached, "\n".join(reached)


# Modules whose names mark internals, and objects whose underscored
# attributes are private.
PRIVATE_MODULES = ("keras.src", "tensorflow.python", "jax._src")
FRAMEWORKS = {"torch", "tf", "tensorflow", "jax", "keras", "ops"}


def _keras_private_names():
    """Underscored attributes and methods Keras' own source defines."""
    names = set()
    pattern = re.compile(r"(?:def |self\.)(_[a-z][a-z0-9_]*)")
    for folder, _, files in os.walk(os.path.dirname(keras.__file__)):
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(folder, name)) as file:
                    names.update(pattern.findall(file.read()))
    return names


# Keras classes keras_bert subclasses: their private methods are Keras'.
KERAS_BASES = (keras.Model, keras.layers.Layer, keras.optimizers.Optimizer,
               keras.optimizers.schedules.LearningRateSchedule,
               keras.losses.Loss, keras.metrics.Metric)


def _overrides_keras(name):
    return (name.startswith("_") and not name.startswith("__")
            and any(hasattr(base, name) for base in KERAS_BASES))


def _own_names(trees):
    """Underscored names keras_bert defines itself (functions, methods
    Keras' classes lack, module globals, attributes it assigns)."""
    names = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not (
                    _overrides_keras(node.name)):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx,
                                                           ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(
                    node.ctx, ast.Store):
                names.add(node.attr)
    return names


def _private_reaches(tree, keras_private):
    """`(line, what)` for each reach into framework internals."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            targets = [node.module] + [f"{node.module}.{alias.name}"
                                       for alias in node.names]
        else:
            targets = []
        for target in targets:
            if target.startswith(PRIVATE_MODULES):
                yield node.lineno, f"imports {target}"
        if isinstance(node, ast.Call) and node.args and isinstance(
                node.args[0], ast.Constant) and isinstance(
                node.args[0].value, str) and node.args[0].value.startswith(
                PRIVATE_MODULES):
            yield node.lineno, f"imports {node.args[0].value}"
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") \
                and not node.attr.startswith("__"):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in FRAMEWORKS:
                yield node.lineno, f"reads {base.id}...{node.attr}"
            elif node.attr in keras_private:
                yield node.lineno, f"uses Keras' private {node.attr}"
        if isinstance(node, ast.ClassDef):
            for method in node.body:
                if isinstance(method, ast.FunctionDef) and _overrides_keras(
                        method.name):
                    yield method.lineno, f"overrides Keras' {method.name}"


def test_framework_internals_are_reached_from_compat_only():
    trees = {module: parse(path)[0] for module, path in modules().items()}
    # A name keras_bert defines outside `_compat` is its own, even where
    # Keras happens to use the same one.
    own = _own_names(tree for module, tree in trees.items()
                     if not module.startswith(COMPAT))
    keras_private = _keras_private_names() - own
    reaches = sorted(
        f"{module}:{line} {what}"
        for module, tree in trees.items() if not module.startswith(COMPAT)
        for line, what in _private_reaches(tree, keras_private))
    assert not reaches, "\n".join(reaches)
