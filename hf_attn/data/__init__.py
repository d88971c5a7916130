"""Synthetic tasks whose evidence is known (so attention can be scored), and collators."""

from .collators import PaddingCollator, tokenize_dataset
from .synthetic import (
    CUE_SENTIMENT_LABELS,
    PAIR_LABELS,
    cue_word_pairs,
    cue_word_sentiment,
    load_synthetic_task,
)

__all__ = [
    "CUE_SENTIMENT_LABELS",
    "PAIR_LABELS",
    "PaddingCollator",
    "cue_word_pairs",
    "cue_word_sentiment",
    "load_synthetic_task",
    "tokenize_dataset",
]
