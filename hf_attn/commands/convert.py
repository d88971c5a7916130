"""`hf-attn convert ARCH ...`: an original implementation's checkpoint to an hf_attn model folder, by the converter
of the architecture's folder."""

from __future__ import annotations


def main(argv: list[str]) -> None:
    """`hf-attn convert ARCH ...`: the converter of the architecture's folder (its row's `converter`), given the rest
    of the command line."""
    import importlib

    from ..registry.index import read_index

    converters = {row.name: row.converter for row in read_index() if row.converter}
    usage = f"usage: hf-attn convert ARCH [options]; ARCH is one of {', '.join(sorted(converters))}"
    if not argv or argv[0] in ("-h", "--help"):
        print(f"{usage}\n(hf-attn convert ARCH --help: that converter's options)")
        return
    if argv[0] not in converters:
        raise SystemExit(f"hf-attn convert: no converter for {argv[0]!r} ({usage.removeprefix('usage: ')})")
    module = importlib.import_module(f"hf_attn.models.{argv[0]}.{converters[argv[0]]}")
    module.main(argv[1:], prog=f"hf-attn convert {argv[0]}")
