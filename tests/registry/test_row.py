"""What a registry row is made of (`hf_attn.registry.row`): a `Head` and an `Architecture` take their kinds as
objects, never names, and parse each attention field's mask spec once, refusing one they cannot read by name."""

from __future__ import annotations

import dataclasses

import pytest

from hf_attn.registry.table import ARCHITECTURES


def copy(architecture, **changes):
    """The row with `changes`, over copies of its heads (a row links its heads to itself: the registry's stay its)."""
    return dataclasses.replace(architecture, heads=tuple(dataclasses.replace(head) for head in architecture.heads),
                               **changes)  # fmt: skip


def test_a_row_takes_kinds_as_objects_and_links_its_heads_to_itself():
    for architecture in ARCHITECTURES.values():
        assert all(head.architecture is architecture for head in architecture.heads)
        assert set(architecture.attention_masks) == set(architecture.attention_fields)
    architecture = next(iter(ARCHITECTURES.values()))
    head = architecture.heads[0]
    for name in ("inputs", "labels"):
        with pytest.raises(TypeError, match=rf"Head\({name}=\.\.\.\) must be a registered \w+Kind object"):
            dataclasses.replace(head, **{name: str(getattr(head, name))})
    with pytest.raises(TypeError, match=rf"models/{architecture.name}: tokenizer= must be a registered TokenizerKind"):
        copy(architecture, tokenizer=architecture.tokenizer.name)


def test_an_attention_field_whose_mask_spec_does_not_parse_is_named():
    architecture = next(row for row in ARCHITECTURES.values() if row.attention_fields)
    field = next(iter(architecture.attention_fields))
    fields = {**architecture.attention_fields, field: "attention_mask#no-such-rows"}
    with pytest.raises(ValueError, match=rf"^{architecture.name}: attention field {field!r}: "):
        copy(architecture, attention_fields=fields)
    unchanged = copy(architecture)
    assert unchanged.attention_masks == architecture.attention_masks
    assert all(head.architecture is unchanged for head in unchanged.heads)
    assert all(head.architecture is architecture for head in architecture.heads)  # the registry's row untouched


def test_an_importance_over_that_does_not_parse_is_named():
    """`importance_over` is a mask spec as the attention fields' are (what the faithfulness measures rank)."""
    architecture = next(iter(ARCHITECTURES.values()))
    with pytest.raises(ValueError, match=rf"^{architecture.name}: importance_over: .*unknown level 'shots'"):
        copy(architecture, importance_over="support_attention_mask/shots")
    assert copy(architecture, importance_over="support_attention_mask/instances").importance_over.endswith("instances")
