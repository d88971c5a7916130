"""Synthetic tasks whose evidence is known (so attention can be scored), and collators."""

from .collators import PaddingCollator, tokenize_dataset
from .synthetic import (
    AMBIGUOUS_WORDS,
    CUE_SENTIMENT_LABELS,
    LONG_RANGE_LABELS,
    NEGATIVE_CUES,
    PAIR_LABELS,
    POSITIVE_CUES,
    SYNTHETIC_TASKS,
    TAGS,
    SyntheticTask,
    ambiguous_word_tagging,
    bilingual_evidence_documents,
    cue_word_pairs,
    cue_word_sentiment,
    evidence_documents,
    get_synthetic_task,
    long_range_cue,
    toy_translation,
)

__all__ = [
    "AMBIGUOUS_WORDS",
    "CUE_SENTIMENT_LABELS",
    "LONG_RANGE_LABELS",
    "NEGATIVE_CUES",
    "PAIR_LABELS",
    "POSITIVE_CUES",
    "SYNTHETIC_TASKS",
    "TAGS",
    "PaddingCollator",
    "SyntheticTask",
    "ambiguous_word_tagging",
    "bilingual_evidence_documents",
    "cue_word_pairs",
    "cue_word_sentiment",
    "evidence_documents",
    "get_synthetic_task",
    "long_range_cue",
    "tokenize_dataset",
    "toy_translation",
]
