"""Synthetic tasks whose evidence is known (so attention can be scored), collators, and the data path's modules.

The names below are imported from their modules when first asked for: `hf_attn.data.request` (what the options
build) loads without torch or `datasets`.
"""

from __future__ import annotations

import importlib
from typing import Any

# Each public name -> the module that defines it.
_NAMES = {
    **dict.fromkeys(("LabelSetCollator", "PaddingCollator", "labels_by_frequency", "tokenize_dataset"), "collators"),
    **dict.fromkeys(
        (
            "CUE_SENTIMENT_LABELS",
            "NEGATIVE_CUES",
            "PAIR_LABELS",
            "POSITIVE_CUES",
            "SYNTHETIC_TASKS",
            "SyntheticTask",
            "cue_word_pairs",
            "cue_word_sentiment",
            "evidence_documents",
            "get_synthetic_task",
            "label_topics",
            "register_synthetic_task",
            "topic_labels",
            "toy_translation",
        ),
        "synthetic",
    ),
}

__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:
    module = _NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'hf_attn.data' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_NAMES))
