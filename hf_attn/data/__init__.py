"""Synthetic tasks whose evidence is known (so attention can be scored), and collators."""

from .collators import PaddingCollator, tokenize_dataset
from .synthetic import (
    CUE_SENTIMENT_LABELS,
    NEGATIVE_CUES,
    PAIR_LABELS,
    POSITIVE_CUES,
    SYNTHETIC_TASKS,
    SyntheticTask,
    bilingual_evidence_documents,
    cue_word_pairs,
    cue_word_sentiment,
    evidence_documents,
    get_synthetic_task,
    toy_translation,
)

__all__ = [
    "CUE_SENTIMENT_LABELS",
    "NEGATIVE_CUES",
    "PAIR_LABELS",
    "POSITIVE_CUES",
    "SYNTHETIC_TASKS",
    "PaddingCollator",
    "SyntheticTask",
    "bilingual_evidence_documents",
    "cue_word_pairs",
    "cue_word_sentiment",
    "evidence_documents",
    "get_synthetic_task",
    "tokenize_dataset",
    "toy_translation",
]
