"""BI-Attention's synthetic task (Zhou et al., EMNLP 2016): `bilingual_evidence_documents`, the shared evidence
documents as parallel documents in two "languages", few labelled, many unlabelled, for cross-lingual semi-supervised
training. Registered as `bilingual_documents` when the row loads.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from hf_attn.data.synthetic import CUE_SENTIMENT_LABELS, SyntheticTask, evidence_document, register_synthetic_task
from hf_attn.data.task_data import dataset_from_rows

if TYPE_CHECKING:  # datasets loads in a second: imported where rows become a Dataset, not at `import hf_attn`
    from datasets import Dataset

__all__ = ["bilingual_evidence_documents"]

# The second "language" of `bilingual_evidence_documents`: every word is spelt backwards with a suffix, and each
# sentence swaps its words pairwise (w1 w2 w3 w4 -> w2' w1' w4' w3'). A word the "machine translation" fails on
# is left out.


def _pseudo_translate(sentence: list[str], failed_word: int | None = None) -> list[str]:
    words = [word for index, word in enumerate(sentence) if index != failed_word]
    words = [word[::-1] + "u" if word.isalpha() else word for word in words]
    body, end = (words[:-1], words[-1:]) if words and not words[-1].isalpha() else (words, [])
    for index in range(0, len(body) - 1, 2):
        body[index], body[index + 1] = body[index + 1], body[index]
    return body + end


def bilingual_evidence_documents(
    num_examples: int,
    seed: int = 0,
    labelled_fraction: float = 0.05,
    source_cue_drop: float = 0.0,
    target_cue_drop: float = 0.5,
    min_sentences: int = 3,
    max_sentences: int = 6,
    negation_probability: float = 0.0,
) -> Dataset:
    """Parallel documents in two "languages" for cross-lingual, semi-supervised classification (BI-Attention).

    `text` is an `evidence_documents` document, `translation` its rendering in a second language (word mapping plus
    local reordering, see `_pseudo_translate`). Only `labelled_fraction` of the pairs carry their label; the others
    have label -100 (ignored by the cross-entropy, still used by the bilingual distance of the loss).

    The imperfect "machine translation" of the paper's setting is simulated on the labelled pairs only: with
    probability `target_cue_drop` the translation loses the cue (the word is left out), with probability
    `source_cue_drop` the source text does. Unlabelled pairs are parallel text, translated correctly. The default
    split is the paper's training side (labelled source documents, translated); the held-out split of the task
    swaps the drops (`source_cue_drop=1, target_cue_drop=0`): documents written in the second language whose
    translation into the first lost the cue, so the classifier must read the second view. The few labels alone
    teach it poorly (a classifier fit on them leans on the first view, which always had the cue); the bilingual
    term teaches it from the unlabelled pairs.

    Columns: `text`, `translation` (str), `label` (int, -100 when unlabelled), `labelled` (bool),
    `evidence_sentence` (int).
    """
    rng = random.Random(seed)
    rows: dict[str, list] = {"text": [], "translation": [], "label": [], "labelled": [], "evidence_sentence": []}
    for _ in range(num_examples):
        sentences, label, evidence_sentence, cue_index, _ = evidence_document(
            rng, min_sentences, max_sentences, negation_probability
        )
        labelled = rng.random() < labelled_fraction
        drop_source = labelled and rng.random() < source_cue_drop
        drop_target = labelled and rng.random() < target_cue_drop
        source, target = [], []
        for index, sentence in enumerate(sentences):
            is_evidence = index == evidence_sentence
            source += [word for i, word in enumerate(sentence) if not (is_evidence and drop_source and i == cue_index)]
            target += _pseudo_translate(sentence, cue_index if is_evidence and drop_target else None)
        rows["text"].append(" ".join(source))
        rows["translation"].append(" ".join(target))
        rows["label"].append(label if labelled else -100)
        rows["labelled"].append(labelled)
        rows["evidence_sentence"].append(evidence_sentence)
    return dataset_from_rows(rows)


register_synthetic_task(
    "bilingual_documents",
    SyntheticTask(
        bilingual_evidence_documents,
        CUE_SENTIMENT_LABELS,
        "pair_classification",
        "text",
        "translation",
        "evidence_sentence",
        held_out_kwargs={"labelled_fraction": 1.0, "source_cue_drop": 1.0, "target_cue_drop": 0.0},
    ),
)
