"""ELMo's own kinds: what its heads read (`CHARACTERS`, the characters of each word) and its vocabulary
(`CHARACTER_TOKENIZER`, bilm-tf's character mapping with an optional word vocabulary), registered here and named by
the folder's row (`architecture.py`).

Shape legend: B sentences, T tokens (`<S>` and `</S>` included), C characters per token.
"""

from __future__ import annotations

import torch

from hf_attn.data.collators import PaddingCollator
from hf_attn.data.kinds import Sentence, register_input_kind
from hf_attn.tokenization.kinds import TokenizerKind, register_tokenizer_kind

from .tokenization_elmo import ElmoCharacterTokenizerFast, build_elmo_tokenizer, train_elmo_tokenizer

__all__ = ["CHARACTERS", "CHARACTER_TOKENIZER", "Characters"]


class Characters(Sentence):
    """The characters of each word of one text, `(B, T, C)` byte ids (ELMo's tokenizer: `<S>` and `</S>` around a
    text). A task shape takes it where it takes a sentence: one position per word."""

    name = "characters"
    viewable = False  # the maps are the scalar mix's layer weights: ELMo draws its own view

    def collator(self, config):
        return PaddingCollator(0)  # character ids pad with 0 whatever the word vocabulary's padding id

    def example_inputs(self, config, lengths, generator, pair_lengths=None):
        """`n` random words (1–8 random letters each) between `<S>` and `</S>`, as the tokenizer builds them; a
        length of 0 is an all-padding row (no boundaries either)."""
        tokenizer = build_elmo_tokenizer(max_characters_per_token=config.max_characters_per_token)
        sentences = []
        for n in lengths:
            sizes = torch.randint(1, 9, (n,), generator=generator).tolist()
            sentences.append([bytes(torch.randint(97, 123, (size,), generator=generator).tolist()).decode()
                              for size in sizes])  # fmt: skip
        encoded = tokenizer(sentences, is_split_into_words=True, return_tensors="pt")
        return {"input_ids": encoded["input_ids"], "attention_mask": encoded["attention_mask"]}


def _train(
    texts: list[str], vocab_size: int | None, min_frequency: int, lowercase: bool
) -> ElmoCharacterTokenizerFast:
    """`TokenizerKind.trainer`: bilm-tf's word vocabulary over `texts` (the characters need none)."""
    if lowercase:
        raise ValueError("ELMo's character vocabulary is case-sensitive: --lowercase does not apply.")
    return train_elmo_tokenizer(texts, vocab_size=vocab_size, min_frequency=min_frequency)


CHARACTERS = register_input_kind(Characters())
# Every word of the corpus by default (a language model's targets), case kept.
CHARACTER_TOKENIZER = register_tokenizer_kind(
    TokenizerKind("characters", ElmoCharacterTokenizerFast, _train, None, 1, False)
)
