"""STCKA's own kinds: what its heads read (`SENTENCE_CONCEPTS`, a text with its concept set) and its vocabulary
(`CONCEPT_TOKENIZER`: words and concepts, trained with a knowledge base or the texts' concept sets), registered here
and named by the folder's row (`architecture.py`); with the vocabulary's training (`train_concept_tokenizer`) and
building over an original checkpoint's vocabularies (`build_concept_tokenizer`).

Shape legend: B texts, T words, M concepts, W characters per word.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from hf_attn.data.example_inputs import token_ids
from hf_attn.data.kinds import Sentence, register_input_kind
from hf_attn.tokenization.kinds import TokenizerKind, register_tokenizer_kind
from hf_attn.tokenization.word_level import (
    PAD_TOKEN,
    UNK_TOKEN,
    build_word_level_tokenizer,
    train_word_level_tokenizer,
    wrap_tokenizer,
)

from .tokenization_stcka import ConceptSource, ConceptTokenizerFast, concept_vocabulary

__all__ = [
    "CONCEPT_TOKENIZER",
    "SENTENCE_CONCEPTS",
    "SentenceConcepts",
    "build_concept_tokenizer",
    "train_concept_tokenizer",
]


class SentenceConcepts(Sentence):
    """A text and its concept set (STCKA): `input_ids` `(B, T)` and `concept_input_ids` `(B, M)`, with the characters
    of each word and concept (`char_input_ids` `(B, T, C)`, `concept_char_input_ids`) when the model reads them."""

    name = "sentence_concepts"

    def example_inputs(self, config, lengths, generator, pair_lengths=None):
        """Concept sets of varied sizes, some empty; each word's and concept's characters 1–4 bytes."""
        inputs = super().example_inputs(config, lengths, generator)
        concept_ids, concept_mask = token_ids(config, [(2 * n) % 5 for n in lengths], generator,
                                              config.concept_vocab_size)  # fmt: skip
        inputs.update(concept_input_ids=concept_ids, concept_attention_mask=concept_mask)
        if getattr(config, "char_feature_size", 0):
            for prefix, mask in (("", inputs["attention_mask"]), ("concept_", concept_mask)):
                sizes = torch.randint(1, 5, mask.shape, generator=generator) * mask
                char_mask = (torch.arange(4)[None, None, :] < sizes[..., None]).long()
                char_ids = torch.randint(1, 257, char_mask.shape, generator=generator) * char_mask
                inputs.update({f"{prefix}char_input_ids": char_ids, f"{prefix}char_attention_mask": char_mask})
        return inputs


def train_concept_tokenizer(
    texts: Sequence[str],
    concept_source: ConceptSource | None = None,
    concept_sets: Sequence[str | Sequence[str]] | None = None,
    vocab_size: int = 30000,
    min_frequency: int = 1,
    lowercase: bool = True,
    concept_min_frequency: int = 1,
    max_word_length: int | None = 20,
) -> ConceptTokenizerFast:
    """STCKA's tokenizer: a word-level vocabulary trained on ``texts`` (as `train_word_level_tokenizer`) and a
    concept vocabulary of the concepts of their concept sets (``concept_sets``, e.g. a dataset's concept column, or
    linked by ``concept_source``), `[PAD]` 0, `[UNK]` 1, then by decreasing frequency. The source travels with the
    tokenizer: texts passed later get their concepts from it. ``max_word_length``: the characters kept per word and
    concept for the model's character features (`None`: no character ids)."""
    if concept_source is None and concept_sets is None:
        raise ValueError("A concept tokenizer needs a knowledge base (concept_source) or the texts' concept_sets.")
    words = train_word_level_tokenizer(texts, vocab_size=vocab_size, min_frequency=min_frequency, lowercase=lowercase)
    tokenizer = wrap_tokenizer(
        words.backend_tokenizer, PAD_TOKEN, UNK_TOKEN, words.model_max_length, tokenizer_class=ConceptTokenizerFast,
        knowledge_base=concept_source.to_dict() if concept_source is not None else None,
        max_word_length=max_word_length,
    )  # fmt: skip
    sets = tokenizer.concept_sets(list(texts), concept_sets)
    concept_lowercase = concept_source.lowercase if concept_source is not None else True
    tokenizer.init_kwargs["concept_vocab"] = concept_vocabulary(sets, concept_min_frequency, concept_lowercase)
    tokenizer.model_input_names = list(ConceptTokenizerFast.model_input_names)
    return tokenizer


def build_concept_tokenizer(
    vocabulary: Sequence[str],
    concept_vocabulary: Sequence[str],
    concept_source: ConceptSource | None = None,
    pad_token: str = PAD_TOKEN,
    unk_token: str = UNK_TOKEN,
    lowercase: bool = True,
    pre_tokenized: bool = False,
    max_word_length: int | None = None,
) -> ConceptTokenizerFast:
    """A `ConceptTokenizerFast` over fixed vocabularies (e.g. an original checkpoint's): word ``i`` and concept ``j``
    get ids ``i`` and ``j``; both vocabularies use ``pad_token`` and ``unk_token``; ``max_word_length`` as in
    `train_concept_tokenizer`."""
    words = build_word_level_tokenizer(vocabulary, pad_token, unk_token, lowercase, pre_tokenized=pre_tokenized)
    for role, token in (("pad_token", pad_token), ("unk_token", unk_token)):
        if token not in concept_vocabulary:
            raise ValueError(f"{role} {token!r} is not in the concept vocabulary.")
    tokenizer = wrap_tokenizer(
        words.backend_tokenizer, pad_token, unk_token, words.model_max_length, tokenizer_class=ConceptTokenizerFast,
        knowledge_base=concept_source.to_dict() if concept_source is not None else None,
        concept_vocab=list(concept_vocabulary), concept_pad=pad_token, concept_unk=unk_token,
        max_word_length=max_word_length,
    )  # fmt: skip
    tokenizer.model_input_names = list(ConceptTokenizerFast.model_input_names)
    return tokenizer


def _train(
    texts: list[str], vocab_size: int, min_frequency: int, lowercase: bool,
    concept_source: ConceptSource | None = None, concept_sets: Sequence[str | Sequence[str]] | None = None,
) -> ConceptTokenizerFast:  # fmt: skip
    """`TokenizerKind.trainer`: `train_concept_tokenizer` with the knowledge that `hf-attn train`'s STCKA options read
    (`arguments_stcka.StckaArguments.tokenizer_knowledge`: a knowledge base, or the texts' concept sets)."""
    return train_concept_tokenizer(
        texts, concept_source, concept_sets, vocab_size=vocab_size, min_frequency=min_frequency, lowercase=lowercase
    )


SENTENCE_CONCEPTS = register_input_kind(SentenceConcepts())
CONCEPT_TOKENIZER = register_tokenizer_kind(
    TokenizerKind("concepts", ConceptTokenizerFast, _train, 30000, 1, True, reads_knowledge=True)
)
