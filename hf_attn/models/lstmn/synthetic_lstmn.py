"""The LSTMN's synthetic task (Cheng et al., EMNLP 2016): `long_range_cue`, the label set by one cue word at the
start of a 30–60-word sentence of neutral fillers, so the evidence lies dozens of tokens before the end: a reader
must carry it, or retrieve it from a memory (the LSTMN's tape). Registered as `long_range_cue` when the row loads.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from hf_attn.data.synthetic import SyntheticTask, register_synthetic_task
from hf_attn.data.task_data import dataset_from_rows

if TYPE_CHECKING:  # datasets loads in a second: imported where rows become a Dataset, not at `import hf_attn`
    from datasets import Dataset

__all__ = ["LONG_RANGE_LABELS", "long_range_cue"]

LONG_RANGE_LABELS = ["red", "blue", "green", "yellow"]
# Two cue words per class, so that the class is a property of the word, not the word itself.
_LONG_RANGE_CUES = {"red": 0, "crimson": 0, "blue": 1, "navy": 1, "green": 2, "olive": 2, "yellow": 3, "amber": 3}
_LONG_RANGE_FILLERS = [
    "the",
    "a",
    "this",
    "that",
    "it",
    "we",
    "they",
    "he",
    "she",
    "then",
    "and",
    "but",
    "so",
    "of",
    "in",
    "on",
    "at",
    "to",
    "from",
    "with",
    "by",
    "for",
    "over",
    "under",
    "near",
    "cat",
    "dog",
    "box",
    "car",
    "ball",
    "cup",
    "hat",
    "lamp",
    "book",
    "chair",
    "tree",
    "bird",
    "fish",
    "door",
    "road",
    "house",
    "river",
    "town",
    "sees",
    "finds",
    "takes",
    "brings",
    "keeps",
    "moves",
    "holds",
    "follows",
    "paints",
    "likes",
]


def long_range_cue(
    num_examples: int, seed: int = 0, min_length: int = 30, max_length: int = 60, cue_window: int = 4
) -> Dataset:
    """A long-range dependency: one cue word (two per class, `LONG_RANGE_LABELS`) among the first `cue_window`
    words, then neutral filler words up to a length of `min_length`–`max_length`. The label is the cue's class, so
    the last word is 25–60 tokens away from the only evidence: a reader must keep or retrieve it across every
    filler.

    Columns: `text` (str), `label` (int), `evidence_index` (word position of the cue).
    """
    rng = random.Random(seed)
    cues = sorted(_LONG_RANGE_CUES)
    rows: dict[str, list] = {"text": [], "label": [], "evidence_index": []}
    for _ in range(num_examples):
        words = [rng.choice(_LONG_RANGE_FILLERS) for _ in range(rng.randint(min_length, max_length))]
        position, cue = rng.randrange(cue_window), rng.choice(cues)
        words[position] = cue
        rows["text"].append(" ".join(words))
        rows["label"].append(_LONG_RANGE_CUES[cue])
        rows["evidence_index"].append(position)
    return dataset_from_rows(rows)


# The evidence column is not scored during training: an LSTMN's maps are (B, T, T), one row per token.
register_synthetic_task("long_range_cue", SyntheticTask(long_range_cue, LONG_RANGE_LABELS, "classification", "text"))
