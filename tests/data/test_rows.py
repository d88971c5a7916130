"""Rows made canonical (hf_attn.data.rows.canonical_rows): held-out labels the training split never has are left
out and counted, string labels become class ids, and each split is named as the command calls it."""

from __future__ import annotations


def test_held_out_labels_the_training_split_never_has_are_left_out_and_counted():
    """An extreme multi-label task's long tail: a held-out text may carry labels no training text has. No model can
    predict them, so its label set keeps the known ones (an empty set if none), and the record counts the rest."""
    from datasets import Dataset

    from tests.data.requests import canonical_task_data

    train = Dataset.from_dict({"text": ["a b", "c d"], "labels": [["x"], ["y", "x"]]})
    held_out = Dataset.from_dict({"text": ["a d", "b c"], "labels": [["x", "rare"], ["rarer"]]})
    data = canonical_task_data(train, held_out, "multi_label", label_column="labels")
    assert data.eval["label"] == [["x"], []]
    assert data.dropped == {"held-out": {"labels not in the training split": 2}}
    assert data.labels == ["x", "y"]  # by training frequency


def test_string_labels_become_class_ids_not_their_strings():
    """`Dataset.map` keeps an output column's input type when the names agree: string class names came back as the
    strings "0", "1" (a headerless TSV then trained without labels)."""
    from datasets import Dataset, Value

    from tests.data.requests import canonical_task_data

    rows = Dataset.from_dict({"text": ["a b", "c d", "e f"], "label": ["sport", "business", "sport"]})
    data = canonical_task_data(rows, rows, "classification", label_column="label")
    assert data.train.features["label"] == Value("int64") and data.train["label"] == [1, 0, 1]
    assert data.labels == ["business", "sport"]


def test_prepared_data_names_the_split_as_the_command_calls_it():
    """`hf-attn evaluate` reads one file: a missing column or a bad row is reported in "the evaluation split", not
    in a "train split" the user never gave."""
    import pytest
    from datasets import Dataset

    from tests.data.requests import canonical_task_data

    rows = Dataset.from_dict({"text": ["good", "bad"], "label": ["pos", "neg"]})
    with pytest.raises(ValueError, match="not a column of the evaluation split"):
        canonical_task_data(
            rows, rows, "classification", label_column="stars", split_names=("evaluation", "evaluation")
        )
    with pytest.raises(ValueError, match="not a column of the train split"):
        canonical_task_data(rows, rows, "classification", label_column="stars")
