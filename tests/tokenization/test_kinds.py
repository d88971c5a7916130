"""The tokenizer kinds (`hf_attn.tokenization.kinds`): a kind trains its vocabulary with its defaults (or the
options given) from strings or batches, a name is looked up once with the known ones named, and a kind whose
tokenizer breaks the tokenizer contract is refused."""

from __future__ import annotations

import dataclasses

import pytest
from transformers import PreTrainedTokenizerFast

from hf_attn.tokenization.kinds import (
    BPE_TOKENIZER,
    TOKENIZER_KINDS,
    WORD_LEVEL_TOKENIZER,
    get_tokenizer_kind,
    register_tokenizer_kind,
    train_tokenizer,
)

TEXTS = ["The food was great", "the food was awful", "The service was slow"]


def test_a_kind_trains_with_its_defaults_or_the_options_given_from_texts_or_batches():
    lowered = train_tokenizer(WORD_LEVEL_TOKENIZER, TEXTS)
    assert "the" in lowered.get_vocab() and "The" not in lowered.get_vocab()  # word_level lower-cases by default
    cased = train_tokenizer(WORD_LEVEL_TOKENIZER, TEXTS, lowercase=False)
    assert "The" in cased.get_vocab()
    frequent = train_tokenizer(WORD_LEVEL_TOKENIZER, TEXTS, min_frequency=2)
    assert "food" in frequent.get_vocab() and "slow" not in frequent.get_vocab()
    batched = train_tokenizer(WORD_LEVEL_TOKENIZER, [TEXTS[:2], TEXTS[2:]])  # lists, as a dataset is read
    assert batched.get_vocab() == lowered.get_vocab()
    assert isinstance(train_tokenizer(BPE_TOKENIZER, TEXTS * 5, vocab_size=60), WORD_LEVEL_TOKENIZER.tokenizer_class)


def test_a_name_is_looked_up_once_and_an_unknown_one_names_the_known():
    assert get_tokenizer_kind("bpe") is BPE_TOKENIZER and str(BPE_TOKENIZER) == "bpe"
    with pytest.raises(ValueError, match="Unknown tokenizer kind 'sentencepiece'; known: word_level, "):
        get_tokenizer_kind("sentencepiece")


def test_a_kind_whose_tokenizer_breaks_the_contract_is_refused():
    foreign = dataclasses.replace(WORD_LEVEL_TOKENIZER, name="foreign", tokenizer_class=PreTrainedTokenizerFast)
    with pytest.raises(
        ValueError, match=f"tokenizer kind 'foreign': {PreTrainedTokenizerFast.__name__} does not keep the "
    ):
        register_tokenizer_kind(foreign)
    assert "foreign" not in TOKENIZER_KINDS
