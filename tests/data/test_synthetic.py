"""The synthetic tasks (hf_attn.data.synthetic) are deterministic and their evidence is where they say."""

from hf_attn.data import (
    NEGATIVE_CUES,
    POSITIVE_CUES,
    cue_word_pairs,
    cue_word_sentiment,
    evidence_documents,
    get_synthetic_task,
)
from tests.helpers import sentence_words


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


def test_evidence_documents_hold_one_cue_in_the_evidence_sentence():
    data = evidence_documents(300, seed=2)
    assert data.to_dict() == evidence_documents(300, seed=2).to_dict()
    positions = set()
    for row in data:
        sentences = sentence_words(row["text"])
        cues = [(i, j) for i, s in enumerate(sentences) for j, w in enumerate(s) if w in POSITIVE_CUES + NEGATIVE_CUES]
        assert cues == [(row["evidence_sentence"], row["cue_index"])]  # the only cue, where the row says
        cue = sentences[row["evidence_sentence"]][row["cue_index"]]
        assert row["label"] == int((cue in POSITIVE_CUES) != row["negated"])
        assert 3 <= len(sentences) <= 8
        positions.add(row["evidence_sentence"])
    assert positions == set(range(8))  # the evidence sentence moves through every position


def test_unknown_task_is_a_clear_error():
    import pytest

    with pytest.raises(ValueError, match="Unknown synthetic task 'nope'"):
        get_synthetic_task("nope")
