"""Imports run one way: the module graph of `hf_attn/`, `conversion/` and `benchmarks/`, read from the source files'
import statements (every one, function-level and `TYPE_CHECKING` ones included), has no circle and no import from a
lower layer up.

The layers, lowest first (a module may import its own layer and those below; CONTRIBUTING.md says what each holds):

    primitives    hf_attn.layers, hf_attn.utils
    model code    a model folder's configuration / modeling files (everything in it but its row and views)
    tokenization  hf_attn.tokenization
    data          hf_attn.data (the input and label kinds among it, the importance of each token from a head's
                  maps), hf_attn.pipelines, the attention views (hf_attn.visualization: figure, views; each folder's
                  visualization_<name>.py), a folder's kinds.py
    registry      hf_attn.registry: the table (hf_attn.registry.table), its rows' classes
                  (hf_attn.registry.row), the folders' rows (hf_attn.models.<name>.architecture),
                  hf_attn.registry.index
                  (the rows read from their source, for `hf-attn list` and Auto registration) and
                  hf_attn.registry.auto (registering as transformers loads its Auto classes)
    tasks         hf_attn.tasks (task shapes, one Trainer per shape; its heads module: which shape and head, the
                  shapes by name, the folders' included; prediction: a head's inputs for raw texts; examples:
                  every layout's example files), a folder's tasks_<name>.py and training_<name>.py,
                  hf_attn.options (the options of `hf-attn train` and their checks), hf_attn.recipes,
                  hf_attn.visualization.pictures (visualize: a model's row and view) and side_by_side (the
                  attention beside Integrated Gradients), hf_attn.faithfulness
    cards and hub hf_attn.cards (and the saved folder of a run), hf_attn.hub, hf_attn.conversion and the folders'
                  converters (convert_*.py)
    training      hf_attn.training: a training run's two steps (preparation: the task data, head and vocabulary;
                  fitting: the config, model, Trainer, metrics and training record)
    commands      hf_attn.commands: one module a command (train, evaluate, predict, visualize, card, push, verify,
                  convert, demo, list, recipes)
    entry points  hf_attn (the package: its public names; installs the registration), hf_attn.cli (the `hf-attn`
                  command's dispatch), conversion/, benchmarks/

A module the table does not place fails the test: a new module takes its place on purpose.

The same checks run on the graph of a real run too (`RUN_TIME_EDGES`): every hf_attn module imported, the registry
read and everything registered, with each import recorded as it happens, `importlib.import_module` calls (the
registry's rows, Auto registration's classes) and the packages an import runs (`a.b` for `import a.b.c`, unless the
importer lives in it) included.
"""

from __future__ import annotations

import ast
import fnmatch
from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT

LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("primitives", ("hf_attn.layers", "hf_attn.layers.*", "hf_attn.utils", "hf_attn.utils.*")),
    ("model code", ("hf_attn.models.*.*",)),  # after the views and rows below are taken out
    ("tokenization", ("hf_attn.tokenization", "hf_attn.tokenization.*")),
    (
        "data",
        (
            "hf_attn.data",
            "hf_attn.data.*",
            "hf_attn.pipelines",
            "hf_attn.visualization",
            "hf_attn.visualization.figure",
            "hf_attn.visualization.views",
            "hf_attn.data.importance",
            "hf_attn.models.*.visualization_*",
        ),
    ),
    (
        "registry",
        (
            "hf_attn.registry",
            "hf_attn.registry.table",
            "hf_attn.registry.row",
            "hf_attn.registry.index",
            "hf_attn.registry.auto",
            "hf_attn.models",
            "hf_attn.models.*",
        ),
    ),
    (
        "tasks",
        (
            "hf_attn.tasks",
            "hf_attn.tasks.*",
            "hf_attn.options",
            "hf_attn.options.*",
            "hf_attn.recipes",
            "hf_attn.visualization.pictures",
            "hf_attn.visualization.side_by_side",
            "hf_attn.faithfulness",
            "hf_attn.faithfulness.*",
        ),
    ),
    ("cards and hub", ("hf_attn.cards", "hf_attn.hub", "hf_attn.conversion")),
    ("training", ("hf_attn.training", "hf_attn.training.*")),
    ("commands", ("hf_attn.commands", "hf_attn.commands.*")),
    ("entry points", ("hf_attn", "hf_attn.cli", "conversion.*", "benchmarks.*")),
]
# Matched before the table: the views and the rows inside model folders are not model code.
_PLACED_FIRST = {
    "hf_attn.models.*.visualization_*": "data",
    "hf_attn.models.*.kinds": "data",  # a folder's own input, label and tokenizer kinds
    "hf_attn.models.*.tokenization_*": "tokenization",  # a folder's own tokenizer
    "hf_attn.models.*.synthetic_*": "data",  # a folder's own synthetic task
    "hf_attn.models.*.arguments_*": "registry",  # a folder's own `hf-attn train` options, named by its row
    "hf_attn.models.*.tasks_*": "tasks",  # a folder's own task shape
    "hf_attn.models.*.training_*": "tasks",  # a folder's own training (AttentionXML's levels)
    "hf_attn.models.*": "registry",
    "hf_attn.models.*.architecture": "registry",  # a folder's row
    "hf_attn.models.*.convert_*": "cards and hub",  # a folder's converter (with the converters' shared steps)
}


def layer_of(module: str) -> int:
    """The index in `LAYERS` of `module`'s layer; a ValueError for a module the table does not place."""
    names = [name for name, _ in LAYERS]
    for pattern, layer in _PLACED_FIRST.items():
        if fnmatch.fnmatchcase(module, pattern) and module.count(".") == pattern.count("."):
            return names.index(layer)
    for index, (_, patterns) in enumerate(LAYERS):
        if any(fnmatch.fnmatchcase(module, p) and module.count(".") == p.count(".") for p in patterns):
            return index
    raise ValueError(f"{module} has no layer in tests/test_imports.py: give it one on purpose")


def source_modules(root: Path = REPO_ROOT) -> dict[str, Path]:
    """Dotted name -> file of every module of hf_attn/, conversion/ and benchmarks/ (a package is its __init__)."""
    modules = {}
    for top in ("hf_attn", "conversion", "benchmarks"):
        for path in sorted((root / top).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def import_edges(modules: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the modules of `modules` it imports, from every import statement of its file, with the packages
    those imports run."""
    edges: dict[str, set[str]] = {}
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                elif base not in modules and f"{package}.{base}" in modules:  # a benchmark's sibling (`timing`)
                    base = f"{package}.{base}"
                names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
            else:
                continue
            for name in names:
                while name and name not in modules:
                    name = name.rpartition(".")[0]
                if name and name != module:
                    targets.add(name)
        # An import of `a.b.c` runs the packages `a.b` and `a` first, unless the importer lives in them.
        ancestors = {module.rsplit(".", cut)[0] for cut in range(module.count(".") + 1)}
        for name in list(targets):
            while "." in name:
                name = name.rpartition(".")[0]
                if name in modules and name not in ancestors:
                    targets.add(name)
        edges[module] = targets
    return edges


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def upward_imports(edges: dict[str, set[str]]) -> list[str]:
    """`a -> b` for every import of a higher layer's module `b` by a lower layer's `a`."""
    names = [name for name, _ in LAYERS]
    return sorted(
        f"{a} ({names[layer_of(a)]}) -> {b} ({names[layer_of(b)]})"
        for a, targets in edges.items()
        for b in targets
        if layer_of(b) > layer_of(a)
    )


EDGES = import_edges(source_modules())


def test_every_module_has_a_layer():
    unplaced = []
    for module in EDGES:
        try:
            layer_of(module)
        except ValueError as error:
            unplaced.append(str(error))
    assert not unplaced, "\n".join(unplaced)


def test_the_import_graph_has_no_circle():
    assert circles(EDGES) == []


def test_no_import_runs_from_a_lower_layer_up():
    assert upward_imports(EDGES) == []


# Run in a fresh interpreter: records (importer, imported) for every import of an hf_attn module while hf_attn loads
# every module, reads its registry and registers everything.
_TRACER = r"""
import builtins, importlib, importlib.util, json, pkgutil, sys, warnings

edges = set()
_import, _import_module = builtins.__import__, importlib.import_module


def record(importer, name, fromlist=()):
    if not importer.startswith("hf_attn") or not name.startswith("hf_attn"):
        return
    ancestors = {importer.rsplit(".", cut)[0] for cut in range(importer.count(".") + 1)}
    parts = name.split(".")
    targets = {".".join(parts[:end]) for end in range(1, len(parts) + 1)}  # the packages the import runs
    targets |= {f"{name}.{item}" for item in fromlist or () if f"{name}.{item}" in sys.modules}
    edges.update((importer, target) for target in targets - ancestors)


def traced_import(name, globals=None, locals=None, fromlist=(), level=0):
    module = _import(name, globals, locals, fromlist, level)
    globals = globals or {}
    absolute = importlib.util.resolve_name("." * level + name, globals.get("__package__")) if level else name
    record(globals.get("__name__", ""), absolute, fromlist)
    return module


def traced_import_module(name, package=None):
    module = _import_module(name, package)
    record(sys._getframe(1).f_globals.get("__name__", ""), module.__name__)
    return module


builtins.__import__, importlib.import_module = traced_import, traced_import_module
warnings.simplefilter("ignore")
import hf_attn

for info in pkgutil.walk_packages(hf_attn.__path__, "hf_attn."):
    importlib.import_module(info.name)
hf_attn.register_all()
hf_attn.ARCHITECTURES
print(json.dumps(sorted(edges)))
"""


@pytest.fixture(scope="module")
def run_time_edges() -> dict[str, set[str]]:
    import json
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-c", _TRACER], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    edges: dict[str, set[str]] = {}
    for importer, imported in json.loads(result.stdout.strip().splitlines()[-1]):
        edges.setdefault(importer, set()).add(imported)
        edges.setdefault(imported, set())
    return edges


def test_a_real_run_imports_without_a_circle_or_an_upward_import(run_time_edges):
    """The graph of a real run (module docstring): the registry importing the rows with `importlib` and Auto
    registration importing each class are counted, as are the packages each import runs."""
    assert (
        "hf_attn.models.han.architecture" in run_time_edges["hf_attn.registry.table"]
    )  # the importlib calls are seen
    assert "hf_attn.models.han" in run_time_edges["hf_attn.registry.table"]  # and the packages they run
    assert circles(run_time_edges) == []
    assert upward_imports(run_time_edges) == []


def test_the_graph_reader_sees_function_level_relative_and_type_checking_imports(tmp_path):
    """The checks above can fail: a function-level upward import, a circle through `TYPE_CHECKING` and the package
    an import runs are found."""
    (tmp_path / "hf_attn" / "layers").mkdir(parents=True)
    files = {
        "hf_attn/__init__.py": "",
        "hf_attn/layers/__init__.py": "",
        "hf_attn/layers/masking.py": "def f():\n    from ..cards import write_model_card\n",
        "hf_attn/cards.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .hub import push\n",
        "hf_attn/layers/rnn.py": "",
        "hf_attn/hub.py": "from . import cards\nimport hf_attn.layers.rnn\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "conversion").mkdir()
    (tmp_path / "benchmarks").mkdir()
    edges = import_edges(source_modules(tmp_path))
    assert edges["hf_attn.layers.masking"] == {"hf_attn.cards"}
    assert edges["hf_attn.hub"] == {"hf_attn.cards", "hf_attn.layers.rnn", "hf_attn.layers"}  # its package runs
    assert circles(edges) == [["hf_attn.cards", "hf_attn.hub"]]
    assert upward_imports(edges) == ["hf_attn.layers.masking (primitives) -> hf_attn.cards (cards and hub)"]
    with pytest.raises(ValueError, match="no layer"):
        layer_of("hf_attn.somewhere_new")
