"""The registry's rows as their source says them, read without importing a model.

Each `hf_attn/models/<name>/architecture.py` declares its row as one `Architecture(...)` call (`registry.py`).
Importing a row imports its model classes, and with them transformers' modeling code (seconds); reading the call with
`ast` takes milliseconds. `hf-attn list` prints this index, and Auto registration (`hf_attn.registry.auto`) reads from
it which class registers where and in which module it lives, so that a model's module loads only when it is used. It is
the same source, not a copy: `tests/registry/test_table.py` checks that this index equals the imported registry, row by
row.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

MODELS = Path(__file__).resolve().parents[1] / "models"
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
    tokenizer: ClassRef  # the kind's object, by its module and name
    config_class: ClassRef
    base_model_class: ClassRef
    heads: tuple[IndexHead, ...]
    converter: str | None = None  # the folder's converter module (`hf-attn convert`)
    arguments: ClassRef | None = None  # the architecture's own `hf-attn train` options (`--help` lists them)
    view_arguments: ClassRef | None = None  # its attention view's `hf-attn visualize` options
    default: bool = False  # what `hf-attn train` trains when neither --arch nor a recipe names an architecture


# The rules a row follows so that it can be read as source (CONTRIBUTING's "The row, read as source" repeats them);
# `read_row` refuses a row that breaks one, naming its folder and the rule.
ROW_RULES = {
    "one-call": "the row is one `ARCHITECTURE = Architecture(...)` call, its fields by keyword",
    "literal": "`{field}=` is a literal (a string, number, bool or None), not an expression",
    "paper": "`paper=` is an inline `Paper(...)` call whose `year`, `arxiv` (and `link`) are literals",
    "name": "`{field}=` is a bare name, imported into architecture.py or defined there (no call, no attribute, no "
    "string)",
    "heads": "`heads=` is a literal tuple of inline `Head(...)` calls, each `model_class=` a bare name and "
    "`auto_class=` a literal",
}


class RowRuleError(ValueError):
    """A row that the index cannot read as source: the message names the folder and the rule."""


def _refuse(source: Path, rule: str, **names: str) -> RowRuleError:
    return RowRuleError(f"hf_attn/models/{source.parent.name}/{source.name}: {ROW_RULES[rule].format(**names)}.")


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


def _is_call_of(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Call) and getattr(node.func, "id", None) == name


def read_row(source: Path, package: str) -> IndexRow | None:
    """The row declared in `source` (an `ARCHITECTURE = Architecture(...)` assignment) of the module package
    `package` (e.g. `hf_attn.models.<folder>`), or None; a `RowRuleError` names a rule of `ROW_RULES` it breaks."""
    tree = ast.parse(source.read_text(encoding="utf-8"), filename=str(source))
    imported = _imported_names(tree, package)
    calls = [node for node in ast.walk(tree) if _is_call_of(node, "Architecture")]
    if not calls:
        return None
    if len(calls) > 1 or calls[0].args:
        raise _refuse(source, "one-call")
    fields = _keywords(calls[0])

    def literal(field: str, default: object = None) -> object:
        if field not in fields:
            return default
        try:
            return ast.literal_eval(fields[field])
        except ValueError:
            raise _refuse(source, "literal", field=field) from None

    def ref(node: ast.expr, field: str) -> ClassRef:
        if not isinstance(node, ast.Name):
            raise _refuse(source, "name", field=field)
        return ClassRef(imported.get(node.id, f"{package}.{source.stem}"), node.id)

    def head(node: ast.expr) -> IndexHead:
        if not _is_call_of(node, "Head"):
            raise _refuse(source, "heads")
        arguments = dict(zip(("model_class", "auto_class"), node.args, strict=False)) | _keywords(node)  # type: ignore[attr-defined]
        if not isinstance(arguments.get("model_class"), ast.Name):
            raise _refuse(source, "heads")
        try:
            auto_class = ast.literal_eval(arguments["auto_class"]) if "auto_class" in arguments else None
        except ValueError:
            raise _refuse(source, "heads") from None
        return IndexHead(model_class=ref(arguments["model_class"], "heads"), auto_class=auto_class)

    if not _is_call_of(fields.get("paper"), "Paper"):  # type: ignore[arg-type]
        raise _refuse(source, "paper")
    try:
        paper = {key: ast.literal_eval(value) for key, value in _keywords(fields["paper"]).items()}  # type: ignore[arg-type]
    except ValueError:
        raise _refuse(source, "paper") from None
    if not isinstance(fields.get("heads"), ast.Tuple | ast.List):
        raise _refuse(source, "heads")
    tokenizer = fields.get("tokenizer")
    return IndexRow(
        name=literal("name"),  # type: ignore[arg-type]
        display_name=literal("display_name"),  # type: ignore[arg-type]
        year=paper.get("year"),  # type: ignore[arg-type]
        reference=f"arXiv:{paper['arxiv']}" if paper.get("arxiv") else str(paper.get("link")),
        tokenizer=ref(tokenizer, "tokenizer"),  # type: ignore[arg-type]
        config_class=ref(fields.get("config_class"), "config_class"),  # type: ignore[arg-type]
        base_model_class=ref(fields.get("base_model_class"), "base_model_class"),  # type: ignore[arg-type]
        heads=tuple(head(node) for node in fields["heads"].elts),  # type: ignore[attr-defined]
        converter=literal("converter"),  # type: ignore[arg-type]
        arguments=ref(fields["arguments"], "arguments") if "arguments" in fields else None,
        view_arguments=ref(fields["view_arguments"], "view_arguments") if "view_arguments" in fields else None,
        default=bool(literal("default", False)),
    )


def read_index(models_dir: Path = MODELS, package: str = "hf_attn.models") -> list[IndexRow]:
    """Every architecture's row, sorted by name."""
    rows = [read_row(path, f"{package}.{path.parent.name}") for path in sorted(models_dir.glob(f"*/{ROW_FILE}"))]
    return sorted((row for row in rows if row is not None), key=lambda row: row.name)


def default_architecture(models_dir: Path = MODELS) -> str:
    """The architecture whose row says `default=True`: what `hf-attn train` trains when nothing names one."""
    defaults = [row.name for row in read_index(models_dir) if row.default]
    if len(defaults) != 1:
        raise ValueError(f"One row says `default=True`, not {len(defaults)} ({', '.join(defaults) or 'none'}).")
    return defaults[0]


# hf_attn's own public names -> their modules (each model folder brings its own: `public_names`).
PACKAGE_NAMES: dict[str, str] = {
    "ARCHITECTURES": "hf_attn.registry.table",
    "get_architecture": "hf_attn.registry.table",
    "list_models": "hf_attn.registry.table",
    "register_all": "hf_attn.registry.auto",
    "train": "hf_attn.commands.train",
    "visualize": "hf_attn.visualization.pictures",
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


def type_checking_imports(public: dict[str, str], package: str, indent: str = "    ") -> str:
    """The `from MODULE import NAME` lines an IDE or a type checker follows for `public` (names -> modules), relative
    to `package`, one module a statement, sorted as ruff's isort sorts them (modules by name; constants, classes,
    then functions), and the `__all__` that re-exports them: a generated block (`write_type_checking_blocks`; a test
    keeps it current)."""
    by_module: dict[str, list[str]] = {}
    for name, module in public.items():
        by_module.setdefault(module.removeprefix(package), []).append(name)
    lines = []
    for module in sorted(by_module):
        names = sorted(by_module[module], key=lambda name: (not name.isupper(), not name[:1].isupper(), name))
        line = f"{indent}from {module} import {', '.join(names)}"
        if len(line) > 119:
            listed = "".join(f"{indent}    {name},\n" for name in names)
            line = f"{indent}from {module} import (\n{listed}{indent})"
        lines.append(line)
    listed = "".join(f'{indent}    "{name}",\n' for name in sorted(public))
    return "\n".join(lines) + f"\n\n{indent}__all__ = [\n{listed}{indent}]"


# The generated blocks lie between these lines: hf_attn's own names in `hf_attn/__init__.py`, the architectures' in
# `hf_attn/models/__init__.py` (which `hf_attn/__init__.py` star-imports for type checkers), so that no shared module
# outside `hf_attn/models/` names an architecture.
BLOCK_START, BLOCK_END = "    # <generated: the public names>\n", "    # </generated>\n"


def _blocks() -> dict[Path, str]:
    """Each file with a generated block -> the block the public names make now."""
    return {
        MODELS.parent / "__init__.py": type_checking_imports(PACKAGE_NAMES, "hf_attn") + "\n\n",
        MODELS / "__init__.py": type_checking_imports(public_names(), "hf_attn.models") + "\n\n",
    }


def type_checking_blocks() -> list[tuple[Path, str, str]]:
    """Each generated block: its file, the block as it is, and as the public names make it now."""
    found = []
    for init, generated in _blocks().items():
        text = init.read_text(encoding="utf-8")
        start = text.index(BLOCK_START) + len(BLOCK_START)
        found.append((init, text[start : text.index(BLOCK_END, start)], generated))
    return found


def write_type_checking_blocks() -> None:
    """Rewrites the generated blocks from the public names."""
    for init, current, generated in type_checking_blocks():
        text = init.read_text(encoding="utf-8")
        start = text.index(BLOCK_START) + len(BLOCK_START)
        init.write_text(text[:start] + generated + text[start + len(current) :], encoding="utf-8")


@functools.cache  # read once per process: option parsing asks several times
def option_classes(field: str) -> dict[str, type]:
    """Each architecture's options class named by its row's `field` (`arguments`: its `hf-attn train` options;
    `view_arguments`: its picture's `hf-attn visualize` options), by architecture name, from the index and imported
    alone (a light module of its folder, neither torch nor transformers): what `--help` lists."""
    import importlib

    return {
        row.name: getattr(importlib.import_module(ref.module), ref.name)
        for row in read_index()
        if (ref := getattr(row, field)) is not None
    }


if __name__ == "__main__":  # `python -m hf_attn.registry.index`: the generated blocks rewritten
    write_type_checking_blocks()
