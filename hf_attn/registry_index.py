"""The registry's rows as `hf-attn list` shows them, read from the model folders' source without importing them.

Each `hf_attn/models/<name>/__init__.py` declares its row as one `Architecture(...)` call of literals (`registry.py`).
Importing a row imports its model classes, and with them torch and transformers (seconds); reading the call's
literals with `ast` takes milliseconds, so `hf-attn list` starts at once. It is the same source, not a copy:
`tests/test_cli.py` checks that this index equals the imported registry, row by row.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

MODELS = Path(__file__).resolve().parent / "models"


@dataclass(frozen=True)
class IndexRow:
    """What `hf-attn list` prints of one architecture: its name, display name, paper year and reference (as
    `Paper.reference`), and its heads' class names."""

    name: str
    display_name: str
    year: int
    reference: str
    heads: tuple[str, ...]


def _keywords(call: ast.Call) -> dict[str, ast.expr]:
    return {keyword.arg: keyword.value for keyword in call.keywords if keyword.arg}


def _row(source: Path) -> IndexRow | None:
    """The row declared in `source` (an `ARCHITECTURE = Architecture(...)` assignment), or None."""
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"), filename=str(source))):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Architecture"):
            continue
        fields = _keywords(node)
        paper = _keywords(fields["paper"])  # type: ignore[arg-type]
        arxiv = ast.literal_eval(paper["arxiv"])
        link = ast.literal_eval(paper["link"]) if "link" in paper else None
        heads = tuple(head.args[0].id for head in fields["heads"].elts)  # type: ignore[attr-defined]
        return IndexRow(
            name=ast.literal_eval(fields["name"]),
            display_name=ast.literal_eval(fields["display_name"]),
            year=ast.literal_eval(paper["year"]),
            reference=f"arXiv:{arxiv}" if arxiv else str(link),
            heads=heads,
        )
    return None


def read_index() -> list[IndexRow]:
    """Every architecture's row, sorted by name."""
    rows = [_row(path) for path in sorted(MODELS.glob("*/__init__.py"))]
    return sorted((row for row in rows if row is not None), key=lambda row: row.name)
