"""A vocabulary trained on a corpus for each tokenizer kind of the registry (`Architecture.tokenizer`).

kind        trained by                     default vocabulary   min. frequency   lower-cased
word_level  `train_word_level_tokenizer`   30,000               1                yes (as the papers did)
document    `train_document_tokenizer`     30,000               1                yes
bpe         `train_bpe_tokenizer`          8,000                2                no (the Transformer's BPE)
characters  `train_elmo_tokenizer`         every word           1                no (ELMo reads characters)
concepts    `train_concept_tokenizer`      30,000 (+ concepts)  1                yes (STCKA: words and concept sets)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from transformers import PreTrainedTokenizerBase

from .bpe import train_bpe_tokenizer
from .concepts import ConceptSource
from .elmo import train_elmo_tokenizer
from .word_level import train_concept_tokenizer, train_document_tokenizer, train_word_level_tokenizer

_DEFAULTS = {
    "word_level": (30000, 1, True),
    "document": (30000, 1, True),
    "bpe": (8000, 2, False),
    "characters": (None, 1, False),
    "concepts": (30000, 1, True),
}


def train_tokenizer(
    kind: str,
    texts: Iterable[str],
    vocab_size: int | None = None,
    min_frequency: int | None = None,
    lowercase: bool | None = None,
    concept_source: ConceptSource | None = None,
    concept_sets: Sequence[str | Sequence[str]] | None = None,
) -> PreTrainedTokenizerBase:
    """A tokenizer of `kind` trained on `texts`; `None` options take the kind's defaults (table above). `concepts`
    needs a knowledge base (`concept_source`) or the texts' `concept_sets`."""
    if kind not in _DEFAULTS:
        raise ValueError(f"Unknown tokenizer kind {kind!r}; known: {', '.join(_DEFAULTS)}.")
    default_size, default_frequency, default_lowercase = _DEFAULTS[kind]
    size = vocab_size or default_size
    frequency = default_frequency if min_frequency is None else min_frequency
    lower = default_lowercase if lowercase is None else lowercase
    if kind == "concepts":
        return train_concept_tokenizer(
            list(texts), concept_source, concept_sets, vocab_size=size, min_frequency=frequency, lowercase=lower
        )
    if kind == "characters":
        if lower:
            raise ValueError("ELMo's character vocabulary is case-sensitive: --lowercase does not apply.")
        return train_elmo_tokenizer(texts, vocab_size=size, min_frequency=frequency)
    train = {"word_level": train_word_level_tokenizer, "document": train_document_tokenizer}.get(
        kind, train_bpe_tokenizer
    )
    return train(texts, vocab_size=size, min_frequency=frequency, lowercase=lower)
