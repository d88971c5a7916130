"""Keeps every ``# Copied from hf_attn.<module>.<name>`` block of the package identical to its source.

A saved model ships its ``configuration_*.py``/``modeling_*.py`` for ``trust_remote_code``, and transformers copies
only those files and the files they import relatively from their own folder. So each model folder has a sibling
``common.py`` holding copies of the ``hf_attn.layers`` primitives (and the loading mixin) the model uses, each under a
marker comment, the way transformers does it. This module finds every marker in the package and compares (or, with
``--fix``, rewrites) the ``def``/``class`` that follows it with the named object's source.

Markers, at the indentation of the copied block:

- ``# Copied from hf_attn.layers.masking.masked_softmax``: a top-level function or class;
- ``# Copied from hf_attn.models.han.modeling_han.HanPreTrainedModel._init_weights``: a method (any nesting);
- ``# Copied from hf_attn.x.y.Name with Han->BiAttention, han->bi_attention``: the source with each name replaced
  (in order), for twins that differ only by names.

Usage: ``python -m hf_attn.utils.copies [--fix]`` (exit status 1 when a copy differs and ``--fix`` is not given).
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"^(?P<indent>\s*)# Copied from (?P<source>hf_attn(?:\.\w+)+)(?: with (?P<renames>.+?))?\s*$")
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass(frozen=True)
class CopyMismatch:
    """A copy that differs from its source: the file, the marker's line (1-based) and the dotted source name."""

    path: Path
    line: int
    source: str


def _span(node: ast.AST) -> tuple[int, int]:
    """0-based ``[start, end)`` line span of a def/class, decorators included."""
    start = min([node.lineno] + [decorator.lineno for decorator in node.decorator_list])
    return start - 1, node.end_lineno


def _definition_at(tree: ast.Module, first_line: int) -> ast.AST:
    """The def/class (at any depth) whose span starts on ``first_line`` (1-based)."""
    for node in ast.walk(tree):
        if isinstance(node, _DEFINITIONS) and _span(node)[0] == first_line - 1:
            return node
    raise ValueError(f"no def/class on line {first_line} after a '# Copied from' marker")


def _resolve(dotted: str) -> tuple[Path, list[str]]:
    """The file of ``hf_attn.<module path>.<Name>[.<attr>...]`` and the names inside it, found by trying the longest
    module path that exists."""
    parts = dotted.split(".")[1:]
    for split in range(len(parts) - 1, 0, -1):
        path = PACKAGE_ROOT.joinpath(*parts[:split]).with_suffix(".py")
        if path.is_file():
            return path, parts[split:]
    raise ValueError(f"no module of hf_attn holds {dotted}")


def source_of(dotted: str) -> list[str]:
    """The source lines of ``hf_attn.<module path>.<name>`` (a method too), dedented to column 0."""
    path, names = _resolve(dotted)
    lines = path.read_text().splitlines(keepends=True)
    body = ast.parse("".join(lines)).body
    node = None
    for name in names:
        node = next((n for n in body if isinstance(n, _DEFINITIONS) and n.name == name), None)
        if node is None:
            raise ValueError(f"no definition {name!r} in {path} (looking for {dotted})")
        body = node.body
    start, end = _span(node)
    return textwrap.dedent("".join(lines[start:end])).splitlines(keepends=True)


def expected_copy(dotted: str, renames: str | None, indent: str) -> list[str]:
    """What the block under a marker must read: the source, renamed, at the marker's indentation."""
    text = "".join(source_of(dotted))
    for rename in (renames or "").split(","):
        if rename.strip():
            old, new = (part.strip() for part in rename.split("->"))
            text = text.replace(old, new)
    return [indent + line if line.strip() else line for line in text.splitlines(keepends=True)]


def check_file(path: Path, fix: bool = False) -> list[CopyMismatch]:
    """Compares (and with ``fix`` rewrites) every marked copy in ``path``; returns the copies that differed."""
    lines = path.read_text().splitlines(keepends=True)
    mismatches: list[CopyMismatch] = []
    # Walk bottom-up so that rewriting a block does not shift the line numbers of the markers above it.
    for index in reversed(range(len(lines))):
        match = MARKER.match(lines[index])
        if not match:
            continue
        start, end = _span(_definition_at(ast.parse("".join(lines)), index + 2))
        expected = expected_copy(match["source"], match["renames"], match["indent"])
        if lines[start:end] != expected:
            mismatches.append(CopyMismatch(path, index + 1, match["source"]))
            if fix:
                lines[start:end] = expected
    if fix and mismatches:
        path.write_text("".join(lines))
    return mismatches


def check_copies(fix: bool = False, root: Path = PACKAGE_ROOT) -> list[CopyMismatch]:
    """Checks every Python file under ``root`` (the whole package by default); returns the copies that differ."""
    return [mismatch for path in sorted(root.rglob("*.py")) for mismatch in check_file(path, fix=fix)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fix", action="store_true", help="rewrite differing copies from their source")
    args = parser.parse_args(argv)
    mismatches = check_copies(fix=args.fix)
    for mismatch in mismatches:
        verb = "rewritten from" if args.fix else "differs from"
        print(f"{mismatch.path}:{mismatch.line}: copy {verb} {mismatch.source}")
    return 0 if args.fix or not mismatches else 1


if __name__ == "__main__":
    sys.exit(main())
