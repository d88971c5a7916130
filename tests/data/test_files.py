"""Your data as `datasets` reads it (`hf_attn.data.files`): one file with a seeded share held out and said so, a
folder's held-out split found by its name, and a file that cannot be parsed named with the row that breaks it."""

from __future__ import annotations

import pytest

from hf_attn.data.files import load_splits


def write_csv(path, rows: int):
    path.write_text("text,label\n" + "".join(f"review {i},{'pos' if i % 2 else 'neg'}\n" for i in range(rows)))
    return path


def test_one_file_holds_out_a_seeded_share_and_says_so(tmp_path):
    path = write_csv(tmp_path / "reviews.csv", 40)
    notes: list[str] = []
    train, held_out, source = load_splits(str(path), eval_fraction=0.25, seed=3, notes=notes)
    assert (len(train), len(held_out)) == (30, 10) and train.column_names == ["text", "label"]
    assert notes == [f"[hf-attn] no held-out split in {path}: holding out 10 training rows"]
    assert source["held_out"] == "25% of train (seed 3)"
    again, _, _ = load_splits(str(path), eval_fraction=0.25, seed=3, notes=[])
    assert again["text"] == train["text"]  # the same rows for the same seed


def test_a_folders_held_out_split_is_found_by_its_name_or_asked_for(tmp_path):
    write_csv(tmp_path / "train.csv", 12)
    write_csv(tmp_path / "test.csv", 4)
    train, held_out, source = load_splits(str(tmp_path))
    assert (len(train), len(held_out), source["held_out"]) == (12, 4, "test")
    with pytest.raises(ValueError, match=r"--eval-split 'dev' is not a split of .*; it has \['train', 'test'\]"):
        load_splits(str(tmp_path), eval_split="dev")


def test_a_row_that_breaks_the_file_is_named_and_an_empty_file_is_said_to_be(tmp_path):
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"text": "fine", "label": 1}\n{"text": "cut off", "label\n')
    with pytest.raises(ValueError, match=r"--dataset .*broken\.jsonl cannot be parsed as json: row 2"):
        load_splits(str(broken))
    empty = tmp_path / "empty.csv"
    empty.write_text("text,label\n")
    with pytest.raises(ValueError, match=r"--dataset .*empty\.csv is empty: it holds no rows"):
        load_splits(str(empty))
