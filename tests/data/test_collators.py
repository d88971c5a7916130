"""The collators (hf_attn.data.collators): sentences, pairs and documents padded at each level, independently."""

from __future__ import annotations

import torch

from hf_attn.data import (
    PaddingCollator,
)


def test_padding_collator_pads_sentences_and_pairs_independently():
    features = [
        {
            "input_ids": [5, 6, 7],
            "attention_mask": [1, 1, 1],
            "pair_input_ids": [8],
            "pair_attention_mask": [1],
            "label": 1,
            "text": "dropped",
        },
        {
            "input_ids": [9],
            "attention_mask": [1],
            "pair_input_ids": [4, 3],
            "pair_attention_mask": [1, 1],
            "label": 0,
            "text": "dropped",
        },
    ]
    batch = PaddingCollator(pad_token_id=0)(features)
    assert set(batch) == {"input_ids", "attention_mask", "pair_input_ids", "pair_attention_mask", "labels"}
    assert batch["input_ids"].tolist() == [[5, 6, 7], [9, 0, 0]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 0, 0]]
    assert batch["pair_input_ids"].tolist() == [[8, 0], [4, 3]]
    assert torch.equal(batch["labels"], torch.tensor([1, 0]))


def test_padding_collator_pads_documents_at_both_levels():
    features = [
        {"input_ids": [[5, 6], [7]], "attention_mask": [[1, 1], [1]], "label": 1},
        {"input_ids": [[9, 8, 7]], "attention_mask": [[1, 1, 1]], "label": -100},
        {"input_ids": [], "attention_mask": [], "label": 0},
    ]
    batch = PaddingCollator(pad_token_id=0)(features)
    assert batch["input_ids"].tolist() == [[[5, 6, 0], [7, 0, 0]], [[9, 8, 7], [0, 0, 0]], [[0, 0, 0], [0, 0, 0]]]
    assert batch["attention_mask"].sum(dim=(1, 2)).tolist() == [3, 3, 0]
    assert batch["labels"].tolist() == [1, -100, 0]
