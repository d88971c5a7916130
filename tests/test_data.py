"""Synthetic tasks are deterministic and their evidence is where they say; the collator pads correctly."""

import torch

from hf_attn.data import (
    NEGATIVE_CUES,
    POSITIVE_CUES,
    PaddingCollator,
    cue_word_pairs,
    cue_word_sentiment,
    evidence_documents,
    get_synthetic_task,
)
from hf_attn.models.bi_attention.synthetic_bi_attention import _pseudo_translate, bilingual_evidence_documents
from hf_attn.models.lstmn.synthetic_lstmn import _LONG_RANGE_CUES, long_range_cue


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


def test_long_range_cue_is_the_only_cue_and_far_from_the_end():
    data = long_range_cue(300, seed=2)
    assert data.to_dict() == long_range_cue(300, seed=2).to_dict()
    for row in data:
        words = row["text"].split()
        assert 30 <= len(words) <= 60 and row["evidence_index"] < 4
        assert [word for word in words if word in _LONG_RANGE_CUES] == [words[row["evidence_index"]]]
        assert row["label"] == _LONG_RANGE_CUES[words[row["evidence_index"]]]
    assert sorted(set(data["label"])) == [0, 1, 2, 3]


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


def _sentences(text: str) -> list[list[str]]:
    """Word lists, each ending at a "." word (as the document tokenizer splits them)."""
    sentences, current = [], []
    for word in text.split():
        current.append(word)
        if word == ".":
            sentences.append(current)
            current = []
    return sentences


def test_evidence_documents_hold_one_cue_in_the_evidence_sentence():
    data = evidence_documents(300, seed=2)
    assert data.to_dict() == evidence_documents(300, seed=2).to_dict()
    positions = set()
    for row in data:
        sentences = _sentences(row["text"])
        cues = [(i, j) for i, s in enumerate(sentences) for j, w in enumerate(s) if w in POSITIVE_CUES + NEGATIVE_CUES]
        assert cues == [(row["evidence_sentence"], row["cue_index"])]  # the only cue, where the row says
        cue = sentences[row["evidence_sentence"]][row["cue_index"]]
        assert row["label"] == int((cue in POSITIVE_CUES) != row["negated"])
        assert 3 <= len(sentences) <= 8
        positions.add(row["evidence_sentence"])
    assert positions == set(range(8))  # the evidence sentence moves through every position


def test_bilingual_documents_translate_word_by_word_and_mark_unlabelled_pairs():
    assert _pseudo_translate(["the", "food", "was", "good", "."]) == ["doofu", "ehtu", "doogu", "sawu", "."]
    assert _pseudo_translate(["the", "food", "was", "good", "."], failed_word=3) == ["doofu", "ehtu", "sawu", "."]
    data = bilingual_evidence_documents(400, seed=1, labelled_fraction=0.25, target_cue_drop=1.0)
    labelled = [row for row in data if row["labelled"]]
    assert 60 < len(labelled) < 140 and all(row["label"] == -100 for row in data if not row["labelled"])
    for row in data:
        source, target = _sentences(row["text"]), _sentences(row["translation"])
        assert len(source) == len(target)
        evidence = row["evidence_sentence"]
        for index, (sentence, translation) in enumerate(zip(source, target, strict=True)):
            failed = row["labelled"] and index == evidence  # target_cue_drop=1: labelled translations lose the cue
            if not failed:
                assert translation == _pseudo_translate(sentence)
            else:
                assert len(translation) == len(sentence) - 1
    held_out = bilingual_evidence_documents(50, seed=2, **get_synthetic_task("bilingual_documents").held_out_kwargs)
    for row in held_out:  # the held-out first view never has the cue, the second always does
        assert row["labelled"] and not any(w in POSITIVE_CUES + NEGATIVE_CUES for w in row["text"].split())
        cue_words = [w[:-1][::-1] for w in row["translation"].split() if w[:-1][::-1] in POSITIVE_CUES + NEGATIVE_CUES]
        assert len(cue_words) == 1


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


def test_unknown_task_is_a_clear_error():
    import pytest

    with pytest.raises(ValueError, match="Unknown synthetic task 'nope'"):
        get_synthetic_task("nope")


def test_ambiguous_tagging_needs_context_and_tags_every_word():
    from hf_attn.models.elmo.synthetic_elmo import AMBIGUOUS_WORDS, TAGS, ambiguous_word_tagging

    data = ambiguous_word_tagging(400, seed=3)
    assert data["text"] == ambiguous_word_tagging(400, seed=3)["text"]
    assert data["text"] != ambiguous_word_tagging(400, seed=4)["text"]
    for row in data:
        words, tags = row["text"].split(), [TAGS[t] for t in row["tags"]]
        assert len(words) == len(tags)
        position = row["ambiguous_index"]
        assert words[position] in AMBIGUOUS_WORDS
        assert sum(word in AMBIGUOUS_WORDS for word in words) == 1  # exactly one ambiguous word
        assert tags[position] == ("VERB" if row["ambiguous_is_verb"] else "NOUN")
        # Its left neighbour decides: a subject before a verb, a determiner or an adjective before a noun.
        assert tags[position - 1] in (("NOUN", "PRON") if row["ambiguous_is_verb"] else ("DET", "ADJ"))
    verbs = sum(data["ambiguous_is_verb"])
    assert 0.4 < verbs / len(data) < 0.6


def test_held_out_labels_the_training_split_never_has_are_left_out_and_counted():
    """An extreme multi-label task's long tail: a held-out text may carry labels no training text has. No model can
    predict them, so its label set keeps the known ones (an empty set if none), and the record counts the rest."""
    from datasets import Dataset

    from hf_attn.data.files import prepare_task_data

    train = Dataset.from_dict({"text": ["a b", "c d"], "labels": [["x"], ["y", "x"]]})
    held_out = Dataset.from_dict({"text": ["a d", "b c"], "labels": [["x", "rare"], ["rarer"]]})
    data = prepare_task_data(train, held_out, "multi_label", label_column="labels")
    assert data.eval["label"] == [["x"], []]
    assert data.dropped == {"held-out": {"labels not in the training split": 2}}
    assert data.labels == ["x", "y"]  # by training frequency


def test_string_labels_become_class_ids_not_their_strings():
    """`Dataset.map` keeps an output column's input type when the names agree: string class names came back as the
    strings "0", "1" (a headerless TSV then trained without labels)."""
    from datasets import Dataset, Value

    from hf_attn.data.files import prepare_task_data

    rows = Dataset.from_dict({"text": ["a b", "c d", "e f"], "label": ["sport", "business", "sport"]})
    data = prepare_task_data(rows, rows, "classification", label_column="label")
    assert data.train.features["label"] == Value("int64") and data.train["label"] == [1, 0, 1]
    assert data.labels == ["business", "sport"]


def test_prepared_data_names_the_split_as_the_command_calls_it():
    """`hf-attn evaluate` reads one file: a missing column or a bad row is reported in "the evaluation split", not
    in a "train split" the user never gave."""
    import pytest
    from datasets import Dataset

    from hf_attn.data.files import prepare_task_data

    rows = Dataset.from_dict({"text": ["good", "bad"], "label": ["pos", "neg"]})
    with pytest.raises(ValueError, match="not a column of the evaluation split"):
        prepare_task_data(rows, rows, "classification", label_column="stars", split_names=("evaluation", "evaluation"))
    with pytest.raises(ValueError, match="not a column of the train split"):
        prepare_task_data(rows, rows, "classification", label_column="stars")
