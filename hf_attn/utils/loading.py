"""Safetensors-only loading for every hf_attn model (the mixin each model folder's `common.py` copies).

The mixin is all a model file needs: pickle weights are refused, and a failed load is handed to hf_attn's Hub-cache
repair when hf_attn is installed (`hf_attn.utils.hub_cache`: evicts corrupt downloads, names the root cause). A
model loaded with `trust_remote_code` where hf_attn is not installed loads as transformers does, pickle refused.
"""

from __future__ import annotations


class SafetensorsLoadingMixin:
    """`from_pretrained` for hf_attn models: safetensors only (a folder holding only pickle weights is refused, and
    `use_safetensors=False` raises: loading never unpickles). Listed before `PreTrainedModel` in a model's bases."""

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *args, **kwargs):
        if kwargs.get("use_safetensors") is False:
            raise ValueError("hf_attn models load safetensors only; pickle checkpoints are never unpickled.")
        kwargs["use_safetensors"] = True
        try:
            return super().from_pretrained(pretrained_model_name_or_path, *args, **kwargs)
        except Exception as error:
            try:  # hf_attn installed: evict corrupt Hub downloads and name the root cause
                from hf_attn.utils.hub_cache import explain_load_failure
            except ImportError:
                explain_load_failure = None
            explained = explain_load_failure and explain_load_failure(error, pretrained_model_name_or_path, kwargs)
            if explained is None:
                raise
            raise explained from error
