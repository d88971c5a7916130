"""Synthetic tasks whose evidence is known (so attention can be scored), and collators."""

from .collators import LabelSetCollator, PaddingCollator, labels_by_frequency, tokenize_dataset
from .synthetic import (
    CUE_SENTIMENT_LABELS,
    NEGATIVE_CUES,
    PAIR_LABELS,
    POSITIVE_CUES,
    SYNTHETIC_TASKS,
    SyntheticTask,
    cue_word_pairs,
    cue_word_sentiment,
    evidence_documents,
    get_synthetic_task,
    label_topics,
    register_synthetic_task,
    topic_labels,
    toy_translation,
)

__all__ = [
    "CUE_SENTIMENT_LABELS",
    "NEGATIVE_CUES",
    "PAIR_LABELS",
    "POSITIVE_CUES",
    "SYNTHETIC_TASKS",
    "LabelSetCollator",
    "PaddingCollator",
    "SyntheticTask",
    "cue_word_pairs",
    "cue_word_sentiment",
    "evidence_documents",
    "get_synthetic_task",
    "label_topics",
    "labels_by_frequency",
    "register_synthetic_task",
    "tokenize_dataset",
    "topic_labels",
    "toy_translation",
]
