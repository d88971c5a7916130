"""The input and label kinds (`hf_attn.data.kinds`): a kind is looked up once by name, a pair kind asks for its
second texts, one example is trimmed as if padded alone, and a label set becomes the indicators a multi-hot head
trains on."""

from __future__ import annotations

import pytest
import torch
from transformers import PreTrainedConfig

from hf_attn.data.kinds import (
    DOCUMENT,
    MULTI_HOT,
    SENTENCE,
    SENTENCE_PAIR,
    get_input_kind,
    get_label_kind,
)
from hf_attn.tokenization import train_word_level_tokenizer


def test_a_kind_is_looked_up_by_name_and_an_unknown_one_names_the_registered():
    assert get_input_kind("sentence") is SENTENCE and get_label_kind("multi_hot") is MULTI_HOT
    assert str(SENTENCE_PAIR) == "sentence_pair" and SENTENCE_PAIR.pair and not SENTENCE.pair
    with pytest.raises(ValueError, match=r"Unknown input kind 'image'; registered: .*sentence"):
        get_input_kind("image")


def test_a_pair_kind_encodes_both_texts_and_asks_for_the_second():
    tokenizer = train_word_level_tokenizer(["the food was good", "the service was bad"])
    inputs = SENTENCE_PAIR.encode(tokenizer, ["the food", "the service was bad"], ["was good", "bad"])
    assert set(inputs) == {"input_ids", "attention_mask", "pair_input_ids", "pair_attention_mask"}
    assert inputs["attention_mask"].sum(1).tolist()[0] < inputs["attention_mask"].sum(1).tolist()[1]
    with pytest.raises(ValueError, match="sentence_pair inputs are two texts: give the second ones"):
        SENTENCE_PAIR.encode(tokenizer, ["the food"])


def test_one_example_is_trimmed_as_if_padded_alone():
    mask = torch.tensor([[[1, 1, 0], [1, 0, 0], [0, 0, 0]], [[1, 1, 1], [1, 1, 0], [1, 0, 0]]])  # (B, S, T)
    inputs = {"input_ids": torch.arange(18).reshape(2, 3, 3) * mask, "attention_mask": mask}
    first = DOCUMENT.select_example(inputs, 0)
    assert first["attention_mask"].tolist() == [[[1, 1], [1, 0]]]  # its 2 sentences, its longest of 2 words
    assert first["input_ids"].shape == (1, 2, 2) and DOCUMENT.select_example(inputs, 1)["input_ids"].shape == (1, 3, 3)


def test_a_label_set_becomes_its_indicators():
    config = PreTrainedConfig(num_labels=4)
    assert MULTI_HOT.label_set_targets([[0, 2], [], [3]], config) == [
        [1.0, 0.0, 1.0, 0.0],
        [0.0] * 4,
        [0.0, 0.0, 0.0, 1.0],
    ]
