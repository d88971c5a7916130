"""What the keys of an attention map are (`hf_attn.data.masks`): each spec parsed once into the input mask its keys
follow, a level or the queries of a queries × keys map, and the rows of a map of several distributions; the keys'
mask it computes; and a malformed spec refused naming what is wrong."""

from __future__ import annotations

import pytest
import torch

from hf_attn.data.masks import MASK_LEVELS, MaskSpec, level_sizes
from hf_attn.registry.table import ARCHITECTURES


def test_each_form_parses_into_its_parts():
    assert MaskSpec.parse("attention_mask") == MaskSpec("attention_mask")
    assert MaskSpec.parse("attention_mask/sentences#hops") == MaskSpec("attention_mask", "sentences", None, "hops")
    spec = MaskSpec.parse("attention_mask@pair_attention_mask")
    assert (spec.keys, spec.queries, spec.level) == ("attention_mask", "pair_attention_mask", None)
    assert MaskSpec.parse(spec) is spec and MaskSpec.parse("concept_attention_mask").ids == "concept_input_ids"


@pytest.mark.parametrize(("spec", "fault"), [
    ("attention_mask#layers", "unknown rows 'layers'"), ("input_ids", "name an input mask"),
    ("attention_mask/words", "unknown level 'words'"), ("attention_mask/sentences@pair_attention_mask", "no level"),
    ("attention_mask@pair_ids", "name an input mask"),
])  # fmt: skip
def test_a_malformed_spec_is_refused_naming_the_fault(spec, fault):
    with pytest.raises(ValueError, match=rf"^attention mask spec .*: .*{fault}"):
        MaskSpec.parse(spec)


def test_the_keys_mask_of_each_level():
    words = torch.tensor([[1, 1, 0], [1, 0, 0]])
    inputs = {"attention_mask": words, "pair_attention_mask": torch.tensor([[1, 0], [1, 1]])}
    assert torch.equal(MaskSpec.parse("attention_mask").key_mask(inputs), words.bool())
    causal = MaskSpec.parse("attention_mask/causal").key_mask(inputs)
    assert causal[0].tolist() == [
        [True, False, False],
        [True, True, False],
        [False, False, False],
    ]  # a pad's row empty
    cross = MaskSpec.parse("attention_mask@pair_attention_mask").key_mask(inputs)
    assert cross.shape == (2, 2, 3) and not cross[0, 1].any() and cross[1, 1].tolist() == [True, False, False]
    documents = {"attention_mask": torch.tensor([[[1, 1], [0, 0]], [[1, 0], [1, 0]]])}  # (B, S, T)
    assert MaskSpec.parse("attention_mask/sentences").key_mask(documents).tolist() == [[True, False], [True, True]]


def test_a_level_sized_by_another_map_finds_that_maps_last_axis():
    assert ARCHITECTURES  # the rows loaded: their folders' levels registered (BiBloSA's /block_summaries)
    sized = next(name for name, level in MASK_LEVELS.items() if level.sized_by)
    specs = {"words": MaskSpec.parse("attention_mask")}
    assert level_sizes(specs, {"words": torch.zeros(2, 5)}) == {"words": None}
    specs = {
        "inner": MaskSpec("attention_mask", MASK_LEVELS[sized].sized_by),
        "outer": MaskSpec("attention_mask", sized),
    }
    sizes = level_sizes(specs, {"inner": torch.zeros(2, 3, 7), "outer": torch.zeros(2, 4)})
    assert sizes["outer"] == 7  # the keys of `outer` are as many as `inner`'s last axis
