"""Random model inputs of given lengths, what every head is tested on (`InputKind.example_inputs` builds on them):
token ids that avoid the padding id, with their masks, and documents of sentences.

Shape legend: B examples, T tokens, S sentences.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import PreTrainedConfig

__all__ = ["document_sentence_lengths", "documents", "output_vocab_size", "token_ids"]


def token_ids(
    config: PreTrainedConfig, lengths: Sequence[int], generator: torch.Generator, vocab_size: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded random ids `(B, T)` below `vocab_size` (default the config's) that avoid the padding id, and
    their mask; a length of 0 is an all-padding row."""
    longest = max([*lengths, 1])
    pad = config.pad_token_id if config.pad_token_id is not None else 0
    ids = torch.randint(0, (vocab_size or config.vocab_size) - 1, (len(lengths), longest), generator=generator)
    ids = ids + (ids >= pad).long()  # skip the pad id
    mask = (torch.arange(longest)[None, :] < torch.tensor(list(lengths))[:, None]).long()
    return ids.masked_fill(mask == 0, pad), mask


def document_sentence_lengths(length: int) -> list[int]:
    """The sentence lengths of an example document of "length" n: up to 3 sentences of varied lengths (n, n−1, n−2,
    rotated so the longest is not always first); n = 0 is an empty document."""
    sentences = [length - k for k in range(min(3, length))]
    return sentences[1:] + sentences[:1]


def documents(
    sentence_lengths: Sequence[Sequence[int]],
    vocab_size: int,
    pad_token_id: int = 0,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random right-padded documents `(B, S, T)` (ids avoid the padding id) and their mask, from each document's
    sentence lengths (0 = an empty sentence)."""
    sentences = max([len(document) for document in sentence_lengths] + [1])
    words = max([n for document in sentence_lengths for n in document] + [1])
    mask = torch.zeros(len(sentence_lengths), sentences, words, dtype=torch.long)
    for b, document in enumerate(sentence_lengths):
        for s, n in enumerate(document):
            mask[b, s, :n] = 1
    ids = torch.randint(0, vocab_size - 1, mask.shape, generator=generator)
    ids = ids + (ids >= pad_token_id).long()  # skip the pad id
    return ids.masked_fill(mask == 0, pad_token_id), mask


def output_vocab_size(config: PreTrainedConfig) -> int:
    """The vocabulary of a model's generated ids: `target_vocab_size` where the target side has its own (a label
    sequence's specials + labels), else `vocab_size`."""
    return getattr(config, "target_vocab_size", config.vocab_size)
