"""The name transformers gives the generation cache, across the versions hf_attn supports.

transformers 5.24 renamed `past_key_values` to `cache`: in every `ModelOutput`, in `generate()`'s model kwargs and in
the forward arguments it passes. 5.0–5.23 use `past_key_values`. hf_attn's models accept both names as arguments and
fill the output field the installed version reads (`CACHE_FIELD`), the one field their own output classes
declare (a `past_key_values` field makes 5.24 warn on every output built). The old argument name warns there, as
transformers' own models do.
"""

from __future__ import annotations

import warnings
from typing import Any

from transformers.modeling_outputs import Seq2SeqLMOutput

# "cache" from transformers 5.24, "past_key_values" before.
CACHE_FIELD: str = "cache" if "cache" in Seq2SeqLMOutput.__dataclass_fields__ else "past_key_values"


def cache_argument(past_key_values: Any, cache: Any) -> Any:
    """The cache a forward was given under either name (`ValueError` for two different ones). Where the installed
    transformers names it `cache`, the old name still works with transformers' deprecation warning, as its own
    models give it (a `FutureWarning`); hf_attn's layers hand the cache on as `cache`."""
    if past_key_values is not None and cache is not None and past_key_values is not cache:
        raise ValueError("Pass the cache once: `cache` (transformers ≥ 5.24) or `past_key_values`, not both.")
    if past_key_values is not None and CACHE_FIELD == "cache":
        warnings.warn(
            "`past_key_values` is deprecated for `forward`: transformers ≥ 5.24 names the generation cache "
            "`cache`. Use `cache` instead.",
            FutureWarning,
            stacklevel=3,
        )
    return cache if cache is not None else past_key_values


def cache_field(value: Any) -> dict[str, Any]:
    """Keyword arguments that put `value` in an output's cache field, under the installed version's name."""
    return {CACHE_FIELD: value}


def output_cache(output: Any) -> Any:
    """The cache an output carries, under either name."""
    return getattr(output, CACHE_FIELD, None)
