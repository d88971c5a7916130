"""A task's data in canonical form (`hf_attn.data.task_data`): `TaskData` is frozen (a run's data step completes it
once; nothing fills it in afterwards), its texts are every text and pair of the vocabulary's rows, and each shape's
layout says what its rows cannot do without."""

from __future__ import annotations

import dataclasses

import pytest

from hf_attn.data.task_data import TASK_LAYOUTS, LabelFormat, TaskData, dataset_from_rows, get_task_layout


def pairs() -> TaskData:
    train = dataset_from_rows({"text": ["a b", "c"], "pair": ["d", "e f"], "label": [0, 1]})
    return TaskData(train=train, eval=train.select([0]), shape="pair_classification", text_column="text",
                    pair_column="pair", label_column="label", notes=["[hf-attn] read 2 rows"])  # fmt: skip


def test_task_data_is_frozen_and_a_new_one_is_a_replace():
    data = pairs()
    assert data.notes == ("[hf-attn] read 2 rows",) and data.from_cache == ()  # lists given are kept as tuples
    with pytest.raises(dataclasses.FrozenInstanceError):
        data.shape = "classification"
    with pytest.raises(AttributeError):
        data.notes.append("[hf-attn] later")
    completed = dataclasses.replace(data, notes=(*data.notes, "[hf-attn] held-out: 1 row"), eval=data.train)
    assert completed.notes[-1] == "[hf-attn] held-out: 1 row" and len(completed.eval) == 2
    assert data.notes == ("[hf-attn] read 2 rows",) and len(data.eval) == 1  # the first is as it was


def test_the_texts_are_every_text_and_pair_of_the_vocabulary_rows():
    data = pairs()
    assert sorted(data.texts()) == ["a b", "c", "d", "e f"] and data.count_texts() == 4
    assert not data.streamed
    first = dataset_from_rows({"text": ["x"], "pair": ["y"], "label": [0]})
    sampled = dataclasses.replace(data, vocabulary_rows=first)  # a stream's first rows stand for it
    assert sorted(sampled.texts()) == ["x", "y"] and sampled.count_texts() == 2
    assert list(data.texts(data.eval)) == ["a b", "d"]


def test_each_layout_says_what_its_rows_need_and_an_unknown_shape_is_named():
    assert get_task_layout("pair_classification").needs == ("label_column", "pair_column")
    assert get_task_layout("multi_label").label_sets and get_task_layout("seq2seq").label_format is LabelFormat.NONE
    assert {layout.name for layout in TASK_LAYOUTS.values()} == set(TASK_LAYOUTS)
    with pytest.raises(ValueError, match="Unknown task shape 'regression'; known: classification, "):
        get_task_layout("regression")
