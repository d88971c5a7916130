"""AttentionXML's example data: the extreme multi-label text layout of its original and of the Extreme Classification
Repository's raw-text sets (`train_texts.txt` beside `train_labels.txt`, ...; `hf_attn.data.files.load_xmc_text_folder`
reads it), written from `xmc_documents` (power-law label frequencies over a latent label hierarchy).
"""

from __future__ import annotations

import itertools
import random
from pathlib import Path
from typing import TYPE_CHECKING

from hf_attn.data.synthetic import TOPIC_FILLERS
from hf_attn.data.task_data import dataset_from_rows

if TYPE_CHECKING:  # datasets loads in a second: imported where rows become a Dataset, not at `import hf_attn`
    from datasets import Dataset

__all__ = ["example_files", "xmc_documents"]


def xmc_documents(
    num_examples: int,
    num_labels: int = 1024,
    seed: int = 0,
    min_labels: int = 1,
    max_labels: int = 3,
    zipf_exponent: float = 0.8,
    topic_size: int = 8,
    min_fillers: int = 5,
    max_fillers: int = 15,
) -> Dataset:
    """Extreme multi-label texts with power-law label frequencies and a latent hierarchy (AttentionXML's setting).

    Labels come in topics of `topic_size` (label l in topic l // topic_size) and topics in areas of 8. A label has
    two words of its own (`l17a`, `l17b`), a topic two (`t2a`, `t2b`), an area one (`a0`). Each text draws
    `min_labels`–`max_labels` labels with probability ∝ 1 / rank^`zipf_exponent` (ranks a seeded permutation of the
    labels, so frequent and rare labels are spread over the hierarchy) and writes, per label, one of its words and
    one of its topic's words (and its area's word half the time), among 5–15 fillers, shuffled. A label's words
    identify it; its topic's words are shared with its siblings, so the label tree has structure to find.

    Columns: `text` (str), `labels` (label names `L<id>`, sorted by id).
    """
    rng = random.Random(seed)
    ranks = list(range(num_labels))
    rng.shuffle(ranks)
    # Cumulative weights: what `choices(weights=...)` computes on every call, once (O(log L) per draw, not O(L)).
    cumulative = list(itertools.accumulate(1.0 / (rank + 1) ** zipf_exponent for rank in ranks))
    rows: dict[str, list] = {"text": [], "labels": []}
    for _ in range(num_examples):
        count = rng.randint(min_labels, max_labels)
        labels: set[int] = set()
        while len(labels) < count:
            labels.add(rng.choices(range(num_labels), cum_weights=cumulative)[0])
        words = []
        for label in sorted(labels):
            topic = label // topic_size
            words += [f"l{label}{rng.choice('ab')}", f"t{topic}{rng.choice('ab')}"]
            if rng.random() < 0.5:
                words.append(f"a{topic // 8}")
        words += [rng.choice(TOPIC_FILLERS) for _ in range(rng.randint(min_fillers, max_fillers))]
        rng.shuffle(words)
        rows["text"].append(" ".join(words))
        rows["labels"].append([f"L{label}" for label in sorted(labels)])
    return dataset_from_rows(rows)


def example_files(folder: Path, num_rows: int, seed: int) -> None:
    """`folder/xmc/`: 4 × `num_rows` texts over 64 labels, most of them rare (more texts than the other example files
    have), the last tenth as `test_*` (the row's `example_files`)."""
    xmc = folder / "xmc"
    xmc.mkdir(parents=True, exist_ok=True)
    size = 4 * num_rows
    rows, held_out = xmc_documents(size, num_labels=64, seed=seed), max(1, size // 10)
    for split, part in (
        ("train", rows.select(range(size - held_out))),
        ("test", rows.select(range(size - held_out, size))),
    ):
        (xmc / f"{split}_texts.txt").write_text("\n".join(part["text"]) + "\n")
        (xmc / f"{split}_labels.txt").write_text("\n".join(" ".join(labels) for labels in part["labels"]) + "\n")
