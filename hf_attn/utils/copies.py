"""Keeps the ``# Copied from hf_attn.layers.<module>.<name>`` blocks in model files identical to their source.

A saved model ships its ``configuration_*.py``/``modeling_*.py`` for ``trust_remote_code``, and transformers copies
only files of the model's own folder. So model files carry copies of the ``hf_attn.layers`` primitives they use,
each under a marker comment, the way transformers does it. This module finds every marker and compares (or, with
``--fix``, rewrites) the top-level ``def``/``class`` that follows it with the named object's source.

Usage: ``python -m hf_attn.utils.copies [--fix]`` (exit status 1 when a copy differs and ``--fix`` is not given).
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"^# Copied from (hf_attn(?:\.\w+)+)\s*$")


@dataclass(frozen=True)
class CopyMismatch:
    """A copy that differs from its source: the file, the marker's line (1-based) and the dotted source name."""

    path: Path
    line: int
    source: str


def _top_level_span(tree: ast.Module, name: str | None = None, first_line: int | None = None) -> tuple[int, int]:
    """0-based ``[start, end)`` line span of a top-level def/class, found by name or by its first line."""
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        start = min([node.lineno] + [decorator.lineno for decorator in node.decorator_list])
        if (name is not None and node.name == name) or (first_line is not None and start == first_line):
            return start - 1, node.end_lineno
    wanted = name if name is not None else f"a def/class on line {first_line}"
    raise ValueError(f"no top-level definition: {wanted}")


def source_of(dotted: str) -> list[str]:
    """The source lines of ``hf_attn.<module path>.<name>``, read from the package's files."""
    *module_parts, name = dotted.split(".")
    path = PACKAGE_ROOT.joinpath(*module_parts[1:]).with_suffix(".py")
    lines = path.read_text().splitlines(keepends=True)
    start, end = _top_level_span(ast.parse("".join(lines)), name=name)
    return lines[start:end]


def check_file(path: Path, fix: bool = False) -> list[CopyMismatch]:
    """Compares (and with ``fix`` rewrites) every marked copy in ``path``; returns the copies that differed."""
    lines = path.read_text().splitlines(keepends=True)
    mismatches: list[CopyMismatch] = []
    # Walk bottom-up so that rewriting a block does not shift the line numbers of the markers above it.
    for index in reversed(range(len(lines))):
        match = MARKER.match(lines[index])
        if not match:
            continue
        start, end = _top_level_span(ast.parse("".join(lines)), first_line=index + 2)
        expected = source_of(match.group(1))
        if lines[start:end] != expected:
            mismatches.append(CopyMismatch(path, index + 1, match.group(1)))
            if fix:
                lines[start:end] = expected
    if fix and mismatches:
        path.write_text("".join(lines))
    return mismatches


def check_copies(fix: bool = False, root: Path = PACKAGE_ROOT / "models") -> list[CopyMismatch]:
    """Checks every model file under ``root``; returns the copies that differ from their source."""
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
