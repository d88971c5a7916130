"""Synthetic tasks are deterministic and their evidence is where they say; the collator pads correctly."""

import torch

from hf_attn.data import (
    NEGATIVE_CUES,
    POSITIVE_CUES,
    PaddingCollator,
    cue_word_pairs,
    cue_word_sentiment,
    get_synthetic_task,
)


def test_cue_sentiment_is_deterministic_and_seed_dependent():
    assert cue_word_sentiment(50, seed=3).to_dict() == cue_word_sentiment(50, seed=3).to_dict()
    assert cue_word_sentiment(50, seed=3)["text"] != cue_word_sentiment(50, seed=4)["text"]


def test_cue_decides_the_label_and_negation_flips_it():
    data = cue_word_sentiment(500, seed=0, negation_probability=0.5)
    negated = 0
    for row in data:
        words = row["text"].split()
        cue = words[row["cue_index"]]
        assert cue in POSITIVE_CUES + NEGATIVE_CUES
        assert sum(word in POSITIVE_CUES + NEGATIVE_CUES for word in words) == 1  # exactly one cue
        is_negated = row["cue_index"] > 0 and words[row["cue_index"] - 1] == "not"
        assert is_negated == row["negated"]
        negated += is_negated
        assert row["label"] == int((cue in POSITIVE_CUES) != is_negated)
    assert 200 < negated < 300
    assert len({row["cue_index"] for row in data}) > 15  # the cue moves around
    assert sum(data["label"]) / len(data) > 0.4


def test_cue_pairs_labels_follow_the_premise():
    for row in cue_word_pairs(300, seed=1):
        premise, (_, obj, _, colour) = row["premise"].split(), row["hypothesis"].split()
        if row["label"] == 1:
            assert obj not in premise and row["evidence_index"] == -1
        else:
            assert premise[row["evidence_index"]] == obj
            assert (premise[row["evidence_index"] - 1] == colour) == (row["label"] == 0)


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


def test_unknown_task_is_a_clear_error():
    import pytest

    with pytest.raises(ValueError, match="Unknown synthetic task 'nope'"):
        get_synthetic_task("nope")
