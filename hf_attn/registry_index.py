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
