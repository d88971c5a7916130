"""`hf-attn list`: the registered architectures, read from their rows' source (no torch import)."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`list` takes no options."""


def run(_: argparse.Namespace) -> None:
    from ..registry.index import read_index  # the registry rows read from their source files: no torch import

    for row in read_index():
        heads = ", ".join(head.model_class.name for head in row.heads)
        default = "  [hf-attn train's default]" if row.default else ""
        print(f"{row.name:24s} {row.display_name} ({row.year}, {row.reference}){default}\n{'':24s} heads: {heads}")
