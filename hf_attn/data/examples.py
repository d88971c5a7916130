"""Example files in the layouts of real datasets, with learnable labels: what `hf-attn train --dataset` reads.

`write_shared_example_files(folder)` writes, from the synthetic generators (so each task is learnable and its
evidence known):

    reviews.csv         stars,review              5 classes, star rating set by one cue word (Yelp-like)
    snli.jsonl          premise,hypothesis,label  "the red cat" / "the cat is red": entailment / neutral /
                                                  contradiction (0/1/2), every 20th -1 (no gold label)
    topics.jsonl        text,labels               a list of topic labels per text (RCV1 / AAPD-like)
    pairs.tsv           source<TAB>target         no header: a sentence and its translation
    corpus.txt          one sentence per line      plain text for language models (blank lines between some)

and `hf_attn.tasks.examples.write_example_files(folder)` adds each architecture's own, in its original's layout
(its row's `example_files`, written by its folder; the registry sits above this module):

    xmc/                train_texts.txt + train_labels.txt, test_*: the extreme multi-label text layout, 64 labels
                        with power-law frequencies, 4 × num_rows texts
    snippets/           train.tsv + test.tsv, no header: text<TAB>concepts<TAB>label (concepts space-separated,
                        `none` when no entity is known); the test texts name entities the training texts never do

The manual's "Train on your own data" commands and the tests train on them.
"""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

from .synthetic import (
    _FILLER_PHRASES,
    cue_word_pairs,
    cue_word_sentiment,
    label_topics,
    toy_translation,
)

# One star rating per cue word: the review's other sentences are neutral.
STAR_CUES = {
    1: ["awful", "terrible", "horrible"],
    2: ["poor", "mediocre", "disappointing"],
    3: ["okay", "average", "decent"],
    4: ["good", "nice", "pleasant"],
    5: ["excellent", "superb", "wonderful"],
}
_CUE_SENTENCES = ["the food was {cue}", "service was {cue}", "a {cue} evening", "the room felt {cue}"]


def review_rows(num_rows: int, seed: int = 0) -> list[dict[str, object]]:
    """Reviews of 1–3 neutral sentences and one that holds the star rating's cue word."""
    rng = random.Random(seed)
    rows = []
    for _ in range(num_rows):
        stars = rng.randint(1, 5)
        sentences = [rng.choice(_FILLER_PHRASES) for _ in range(rng.randint(1, 3))]
        cue = rng.choice(_CUE_SENTENCES).format(cue=rng.choice(STAR_CUES[stars]))
        sentences.insert(rng.randint(0, len(sentences)), cue)
        rows.append({"stars": stars, "review": " . ".join(sentences) + " ."})
    return rows


def write_shared_example_files(folder: str | Path, num_rows: int = 600, seed: int = 0) -> Path:
    """Writes the shared shapes' example files (module docstring) into `folder`; returns it."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "reviews.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["stars", "review"])
        writer.writeheader()
        writer.writerows(review_rows(num_rows, seed))
    # One coloured object per premise: the label still needs both sentences (same object? same colour?), and a
    # small model learns it in seconds.
    pairs = cue_word_pairs(num_rows, seed=seed, min_objects=1, max_objects=1)
    with (folder / "snli.jsonl").open("w") as handle:
        for index, row in enumerate(pairs):
            label = -1 if index % 20 == 7 else row["label"]  # SNLI marks pairs without a gold label -1
            handle.write(json.dumps({"premise": row["premise"], "hypothesis": row["hypothesis"], "label": label}))
            handle.write("\n")
    with (folder / "topics.jsonl").open("w") as handle:
        for row in label_topics(num_rows, seed=seed):
            handle.write(json.dumps({"text": row["text"], "labels": row["labels"]}) + "\n")
    with (folder / "pairs.tsv").open("w") as handle:
        for row in toy_translation(num_rows, seed=seed):
            handle.write(f"{row['source']}\t{row['target']}\n")
    with (folder / "corpus.txt").open("w") as handle:
        for index, text in enumerate(cue_word_sentiment(num_rows, seed=seed)["text"]):
            handle.write(text + ("\n\n" if index % 50 == 0 else "\n"))
    return folder
