"""The registry's rows as their source says them, read without importing a model.

Each `hf_attn/models/<name>/architecture.py` declares its row as one `Architecture(...)` call (`registry.py`).
Importing a row imports its model classes, and with them transformers' modeling code (seconds); reading the call
with `ast` takes milliseconds. `hf-attn list` prints this index, and Auto registration (`hf_attn.auto_registration`)
reads from it which class registers where and in which module it lives, so that a model's module loads only when
it is used. It is the same source, not a copy: `tests/test_registry.py` checks that this index equals the imported
registry, row by row.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

MODELS = Path(__file__).resolve().parent / "models"
ROW_FILE = "architecture.py"  # the file of a model folder that declares its registry row


@dataclass(frozen=True)
class ClassRef:
    """A class named in a row, by its module and name (importable without importing anything else of the row)."""

    module: str
    name: str


@dataclass(frozen=True)
class IndexHead:
    """A head as its row names it: its class and its Auto class (`None`: none fits)."""

    model_class: ClassRef
    auto_class: str | None


@dataclass(frozen=True)
class IndexRow:
    """One row: its name, display name, paper year and reference (as `Paper.reference`), tokenizer kind, config
    class, base model class, heads, converter module and own options class."""

    name: str
    display_name: str
    year: int
    reference: str
    tokenizer: ClassRef | str  # the kind's object (by its module and name), or its name
    config_class: ClassRef
    base_model_class: ClassRef
    heads: tuple[IndexHead, ...]
    converter: str | None = None  # the folder's converter module (`hf-attn convert`)
    arguments: ClassRef | None = None  # the architecture's own `hf-attn train` options (`--help` lists them)


def _keywords(call: ast.Call) -> dict[str, ast.expr]:
    return {keyword.arg: keyword.value for keyword in call.keywords if keyword.arg}


def _imported_names(tree: ast.Module, package: str) -> dict[str, str]:
    """Each name the row file imports -> the absolute module it comes from."""
    names = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            anchor = package.rsplit(".", node.level - 1)[0] if node.level else ""  # `from ..x`: one package up
            module = ".".join(part for part in (anchor, node.module or "") if part)
            for alias in node.names:
                names[alias.asname or alias.name] = module
    return names


def _head(call: ast.Call, ref) -> IndexHead:
    """A `Head(model_class, auto_class, ...)` call, positional or by keyword."""
    arguments = dict(zip(("model_class", "auto_class"), call.args, strict=False)) | _keywords(call)
    return IndexHead(model_class=ref(arguments["model_class"]), auto_class=ast.literal_eval(arguments["auto_class"]))


def read_row(source: Path, package: str) -> IndexRow | None:
    """The row declared in `source` (an `ARCHITECTURE = Architecture(...)` assignment) of the module package
    `package` (e.g. `hf_attn.models.han`), or None."""
    tree = ast.parse(source.read_text(encoding="utf-8"), filename=str(source))
    imported = _imported_names(tree, package)

    def ref(node: ast.expr) -> ClassRef:
        name = node.id  # type: ignore[attr-defined]
        return ClassRef(imported.get(name, f"{package}.{source.stem}"), name)

    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Architecture"):
            continue
        fields = _keywords(node)
        paper = _keywords(fields["paper"])  # type: ignore[arg-type]
        arxiv = ast.literal_eval(paper["arxiv"])
        link = ast.literal_eval(paper["link"]) if "link" in paper else None
        return IndexRow(
            name=ast.literal_eval(fields["name"]),
            display_name=ast.literal_eval(fields["display_name"]),
            year=ast.literal_eval(paper["year"]),
            reference=f"arXiv:{arxiv}" if arxiv else str(link),
            tokenizer=ast.literal_eval(fields["tokenizer"])
            if isinstance(fields["tokenizer"], ast.Constant)
            else ref(fields["tokenizer"]),
            config_class=ref(fields["config_class"]),
            base_model_class=ref(fields["base_model_class"]),
            heads=tuple(_head(head, ref) for head in fields["heads"].elts),  # type: ignore[attr-defined]
            converter=ast.literal_eval(fields["converter"]) if "converter" in fields else None,
            arguments=ref(fields["arguments"]) if "arguments" in fields else None,
        )
    return None


def read_index(models_dir: Path = MODELS, package: str = "hf_attn.models") -> list[IndexRow]:
    """Every architecture's row, sorted by name."""
    rows = [read_row(path, f"{package}.{path.parent.name}") for path in sorted(models_dir.glob(f"*/{ROW_FILE}"))]
    return sorted((row for row in rows if row is not None), key=lambda row: row.name)


# hf_attn's own public names -> their modules (each model folder brings its own: `public_names`).
PACKAGE_NAMES: dict[str, str] = {
    "ARCHITECTURES": "hf_attn.registry",
    "get_architecture": "hf_attn.registry",
    "list_models": "hf_attn.registry",
    "register_all": "hf_attn.auto_registration",
    "visualize": "hf_attn.pictures",
}


def _declared_all(path: Path) -> list[str] | None:
    """The names a module's `__all__ = [...]` lists (a literal list or tuple of strings), or None without one."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if any(isinstance(target, ast.Name) and target.id == "__all__" for target in targets):
            try:
                names = ast.literal_eval(node.value)
            except ValueError:
                names = None
            if not isinstance(names, list | tuple) or not all(isinstance(name, str) for name in names):
                raise ValueError(f"{path}: `__all__` must be a literal list of names (it is read without importing).")
            return list(names)
    return None


def public_names(models_dir: Path = MODELS, package: str = "hf_attn.models") -> dict[str, str]:
    """What `import hf_attn` exposes of the architectures: each name of a model folder's `__init__.py` `__all__` ->
    the module of the folder whose own `__all__` lists it, read with `ast` as transformers' `define_import_structure`
    reads a package (nothing is imported). A folder without an `__all__`, or a name no module of the folder (or more
    than one) lists, is refused naming the folder and the name: a folder brings its own public names."""
    public: dict[str, str] = {}
    for init in sorted(models_dir.glob("*/__init__.py")):
        folder = init.parent
        names = _declared_all(init)
        if names is None:
            raise ValueError(
                f"hf_attn/models/{folder.name}/__init__.py declares no `__all__`: list the names `import hf_attn` "
                "exposes of it (its config, base model, heads and any other public object)."
            )
        modules = {path.stem: _declared_all(path) or [] for path in sorted(folder.glob("*.py")) if path != init}
        for name in names:
            owners = [stem for stem, declared in modules.items() if name in declared]
            if len(owners) != 1:
                where = "no module of the folder lists it" if not owners else f"{', '.join(owners)} all list it"
                raise ValueError(
                    f"hf_attn/models/{folder.name}/__init__.py: {name!r} is public, but {where} in its `__all__`."
                )
            public[name] = f"{package}.{folder.name}.{owners[0]}"
    return public


def type_checking_imports(public: dict[str, str], indent: str = "    ") -> str:
    """The `from MODULE import NAME` lines an IDE or a type checker follows for `public` (names -> modules), one
    module a statement, sorted as ruff's isort sorts them (modules by name; constants, classes, then functions):
    the generated block of `hf_attn/__init__.py` (`write_type_checking_block`; a test keeps it current)."""
    by_module: dict[str, list[str]] = {}
    for name, module in public.items():
        by_module.setdefault(module.removeprefix("hf_attn"), []).append(name)
    lines = []
    for module in sorted(by_module):
        names = sorted(by_module[module], key=lambda name: (not name.isupper(), not name[:1].isupper(), name))
        line = f"{indent}from {module} import {', '.join(names)}"
        if len(line) > 119:
            listed = "".join(f"{indent}    {name},\n" for name in names)
            line = f"{indent}from {module} import (\n{listed}{indent})"
        lines.append(line)
    return "\n".join(lines)


# The generated block of hf_attn/__init__.py lies between these lines.
BLOCK_START, BLOCK_END = "    # <generated: the public names>\n", "    # </generated>\n"


def type_checking_block(init: Path = MODELS.parent / "__init__.py") -> tuple[str, str]:
    """The generated block of `init` as it is, and as the public names make it now."""
    text = init.read_text(encoding="utf-8")
    start = text.index(BLOCK_START) + len(BLOCK_START)
    generated = type_checking_imports({**PACKAGE_NAMES, **public_names()}) + "\n\n"
    return text[start : text.index(BLOCK_END, start)], generated


def write_type_checking_block(init: Path = MODELS.parent / "__init__.py") -> None:
    """Rewrites the generated block of `init` from the public names."""
    text = init.read_text(encoding="utf-8")
    current, generated = type_checking_block(init)
    start = text.index(BLOCK_START) + len(BLOCK_START)
    init.write_text(text[:start] + generated + text[start + len(current) :], encoding="utf-8")


if __name__ == "__main__":  # `python -m hf_attn.registry_index`: the generated block of hf_attn/__init__.py rewritten
    write_type_checking_block()
