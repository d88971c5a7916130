"""The generation cache under the name the installed transformers gives it (`hf_attn.layers.generation_cache`):
either name is taken once, two different caches are refused, and outputs carry it under the installed name."""

from __future__ import annotations

import warnings

import pytest
from transformers.modeling_outputs import CausalLMOutputWithPast

from hf_attn.layers.generation_cache import CACHE_FIELD, cache_argument, cache_field, output_cache


def test_the_installed_name_is_transformers_own():
    assert CACHE_FIELD in CausalLMOutputWithPast.__dataclass_fields__
    assert CACHE_FIELD in ("cache", "past_key_values")


def test_either_name_gives_the_cache_and_two_different_ones_are_refused():
    cache, other = object(), object()
    assert cache_argument(None, cache) is cache and cache_argument(None, None) is None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cache_argument(cache, None) is cache and cache_argument(cache, cache) is cache
    old_name_warns = CACHE_FIELD == "cache"  # the old name is deprecated where the new one is installed
    assert any(issubclass(w.category, FutureWarning) for w in caught) == old_name_warns
    with pytest.raises(ValueError, match="Pass the cache once"):
        cache_argument(cache, other)


def test_an_output_carries_the_cache_under_the_installed_name():
    cache = object()
    output = CausalLMOutputWithPast(logits=None, **cache_field(cache))
    assert output_cache(output) is cache and getattr(output, CACHE_FIELD) is cache
    assert output_cache(CausalLMOutputWithPast()) is None
