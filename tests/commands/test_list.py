"""`hf-attn list`: every registered architecture, read from the rows without torch."""

from __future__ import annotations

import importlib

from hf_attn.cli import main
from hf_attn.registry.table import ARCHITECTURES


def test_list_prints_every_architecture(capsys):
    main(["list"])
    out = capsys.readouterr().out
    for name, architecture in ARCHITECTURES.items():
        assert name in out and architecture.paper.reference in out


def test_the_light_listing_is_the_registry():
    """The index `hf-attn list` and Auto registration read without importing equals the imported registry, row by
    row: classes (by module and name), Auto classes and tokenizer kinds."""
    from hf_attn.registry.index import ClassRef, read_index

    def ref(cls: type) -> ClassRef:
        return ClassRef(cls.__module__, cls.__name__)

    rows = {row.name: row for row in read_index()}
    assert rows.keys() == ARCHITECTURES.keys()
    for name, architecture in ARCHITECTURES.items():
        row = rows[name]
        assert row.display_name == architecture.display_name
        assert (row.year, row.reference) == (architecture.paper.year, architecture.paper.reference)
        tokenizer = getattr(importlib.import_module(row.tokenizer.module), row.tokenizer.name)
        assert tokenizer is architecture.tokenizer
        assert (row.config_class, row.base_model_class) == (
            ref(architecture.config_class),
            ref(architecture.base_model_class),
        )
        assert [(head.model_class, head.auto_class) for head in row.heads] == [
            (ref(head.model_class), head.auto_class) for head in architecture.heads
        ]
        for name in ("arguments", "view_arguments"):
            own = getattr(architecture, name)
            assert getattr(row, name) == (ref(own) if own is not None else None), (name, row)
