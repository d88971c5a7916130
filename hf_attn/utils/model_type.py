"""An unknown `model_type` in an hf_attn folder is reported as such, before transformers offers to run the folder's
code.

A saved hf_attn model carries its code and an `auto_map` (for users without hf_attn). When its `config.json` names a
`model_type` that nothing registered knows (a typo, a hand edit), transformers takes the folder for a custom-code
model: it asks "Do you wish to run the custom code? [y/N]" (or, without a terminal, asks for
`trust_remote_code=True`) and never names the unknown type; answering yes runs the folder's Python. With hf_attn
imported, `AutoConfig.from_pretrained` (which every Auto model class and `pipeline()` call) first checks such a
folder: if its `auto_map` points to an hf_attn config class, or its `model_type` is close to an hf_attn one, a
`ValueError` names the type and the nearest known ones. `trust_remote_code=True` is an explicit choice (e.g. a folder
saved by a newer hf_attn with an architecture this one lacks) and goes through unchanged, as does every other model.
"""

from __future__ import annotations

import difflib
import functools
from typing import Any

from transformers import AutoConfig, PreTrainedConfig
from transformers.models.auto.configuration_auto import CONFIG_MAPPING

_HUB_KWARGS = ("cache_dir", "force_download", "local_files_only", "proxies", "revision", "subfolder", "token")


def check_model_type(config_dict: dict[str, Any], location: str, known: dict[str, str]) -> None:
    """Raises `ValueError` when `config_dict` (a folder's `config.json`) carries hf_attn code under an unknown
    `model_type`. `known` maps each hf_attn `model_type` to its config class name."""
    model_type = config_dict.get("model_type")
    auto_config = (config_dict.get("auto_map") or {}).get("AutoConfig")
    if not auto_config or (model_type is not None and model_type in CONFIG_MAPPING):
        return
    class_name = str(auto_config).rsplit(".", 1)[-1]
    close = difflib.get_close_matches(str(model_type), list(known), n=3, cutoff=0.6)
    if class_name not in known.values() and not close:
        return  # someone else's custom-code model: transformers' own rules apply
    suggestion = [name for name, config in known.items() if config == class_name] or close
    hint = f" Did you mean {' or '.join(repr(name) for name in suggestion)}?" if suggestion else ""
    what = "no model_type" if model_type is None else f"model_type {model_type!r}, which is not a known architecture"
    raise ValueError(
        f"The config.json of {location} has {what}.{hint} hf_attn knows: {', '.join(sorted(known))}. "
        "Fix `model_type` in config.json. The folder also carries model code (auto_map); to run that code instead "
        "(e.g. a model saved by a newer hf_attn), pass trust_remote_code=True."
    )


def install_model_type_check(known: dict[str, str]) -> None:
    """Makes `AutoConfig.from_pretrained` run `check_model_type` first (unless `trust_remote_code=True`). Idempotent:
    a second call only updates `known`."""
    current = AutoConfig.__dict__["from_pretrained"].__func__
    original = getattr(current, "__hf_attn_original__", current)

    @functools.wraps(original)
    def from_pretrained(cls, pretrained_model_name_or_path, **kwargs):
        if kwargs.get("trust_remote_code") is not True and not isinstance(pretrained_model_name_or_path, dict):
            hub_kwargs = {name: kwargs[name] for name in _HUB_KWARGS if name in kwargs}
            try:
                config_dict, _ = PreTrainedConfig.get_config_dict(pretrained_model_name_or_path, **hub_kwargs)
            except Exception:  # unreadable, missing, offline...: transformers reports it in its own words
                config_dict = {}
            check_model_type(config_dict, str(pretrained_model_name_or_path), known)
        return original(cls, pretrained_model_name_or_path, **kwargs)

    from_pretrained.__hf_attn_original__ = original
    AutoConfig.from_pretrained = classmethod(from_pretrained)
