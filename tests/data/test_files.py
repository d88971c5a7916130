"""Your data as `datasets` reads it (`hf_attn.data.files`): one file without a held-out split, a seeded share held
out of it by the one rule (`hf_attn.data.rows.hold_out`) and said so, a folder's held-out split found by its name,
and a file that cannot be parsed named with the row that breaks it."""

from __future__ import annotations

import pytest

from hf_attn.data.files import load_splits
from hf_attn.data.request import DataRequest, HeldOut
from hf_attn.data.rows import hold_out


def write_csv(path, rows: int):
    path.write_text("text,label\n" + "".join(f"review {i},{'pos' if i % 2 else 'neg'}\n" for i in range(rows)))
    return path


def test_one_file_holds_out_a_seeded_share_and_says_so(tmp_path):
    path = write_csv(tmp_path / "reviews.csv", 40)
    request = DataRequest(str(path), held_out=HeldOut(fraction=0.25, seed=3))
    rows, none, source = load_splits(request)
    assert none is None and "held_out" not in source and len(rows) == 40
    held = hold_out(rows, request)
    assert (len(held.train), len(held.held_out)) == (30, 10) and held.train.column_names == ["text", "label"]
    assert held.note == f"[hf-attn] no held-out split in {path}: holding out 10 training rows"
    assert held.described == "25% of train (seed 3)"
    again = hold_out(load_splits(request)[0], request)
    assert again.train["text"] == held.train["text"]  # the same rows for the same seed
    with pytest.raises(ValueError, match="has no held-out split: give --eval-split or --eval-dataset"):
        hold_out(rows, DataRequest(str(path), held_out=HeldOut(fraction=0.0)))


def test_a_folders_held_out_split_is_found_by_its_name_or_asked_for(tmp_path):
    write_csv(tmp_path / "train.csv", 12)
    write_csv(tmp_path / "test.csv", 4)
    train, held_out, source = load_splits(DataRequest(str(tmp_path)))
    assert (len(train), len(held_out), source["held_out"]) == (12, 4, "test")
    with pytest.raises(ValueError, match=r"--eval-split 'dev' is not a split of .*; it has \['train', 'test'\]"):
        load_splits(DataRequest(str(tmp_path), held_out=HeldOut(split="dev")))


def test_a_row_that_breaks_the_file_is_named_and_an_empty_file_is_said_to_be(tmp_path):
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"text": "fine", "label": 1}\n{"text": "cut off", "label\n')
    with pytest.raises(ValueError, match=r"--dataset .*broken\.jsonl cannot be parsed as json: row 2"):
        load_splits(DataRequest(str(broken)))
    empty = tmp_path / "empty.csv"
    empty.write_text("text,label\n")
    with pytest.raises(ValueError, match=r"--dataset .*empty\.csv is empty: it holds no rows"):
        load_splits(DataRequest(str(empty)))
