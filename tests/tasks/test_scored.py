"""A trained model's rows to score (`hf_attn.tasks.scored`), as `hf-attn evaluate` and `hf-attn faithfulness` read
them: a file whole, a folder's held-out split, or the held-out rule's rows, in canonical form with the model's own
label names."""

from __future__ import annotations

import pytest
from transformers import PretrainedConfig

from hf_attn.data.files import load_splits
from hf_attn.data.request import Columns, DataRequest, HeldOut
from hf_attn.data.rows import hold_out
from hf_attn.tasks.heads import TASK_SHAPES
from hf_attn.tasks.scored import scored_data, scored_rows


def write_csv(path, rows: int, prefix: str = "review"):
    path.write_text("text,label\n" + "".join(f"{prefix} {i},{'pos' if i % 2 else 'neg'}\n" for i in range(rows)))
    return path


def test_a_file_is_scored_whole_and_a_folder_by_its_held_out_split_or_rule(tmp_path):
    rows = scored_rows(DataRequest(str(write_csv(tmp_path / "one.csv", 10)), held_out=HeldOut(split="dev")))
    assert rows["text"] == [f"review {i}" for i in range(10)]  # every row, in order; a held-out option is moot
    folder = tmp_path / "folder"
    folder.mkdir()
    write_csv(folder / "train.csv", 20)
    request = DataRequest(str(folder), held_out=HeldOut(seed=3))
    rows = scored_rows(request)
    expected = hold_out(load_splits(request)[0], request).held_out["text"]
    assert len(rows) == 2 and rows["text"] == expected  # 10% of 20, the held-out rule's draw
    write_csv(folder / "test.csv", 4, prefix="tested")
    assert scored_rows(DataRequest(str(folder)))["text"] == [f"tested {i}" for i in range(4)]


def test_rows_are_encoded_with_the_models_labels_and_an_unknown_one_is_refused(tmp_path):
    rows = scored_rows(DataRequest(str(write_csv(tmp_path / "one.csv", 6))))
    config = PretrainedConfig(id2label={0: "pos", 1: "neg"})
    request = DataRequest("one.csv", columns=Columns(label="label"))
    data = scored_data(TASK_SHAPES["classification"], rows, request, config, {})
    assert data.eval["label"] == [1, 0, 1, 0, 1, 0] and data.labels == ["pos", "neg"]
    config = PretrainedConfig(id2label={0: "pos", 1: "other"})
    with pytest.raises(ValueError, match=r"label 'neg' of the evaluation split never occurs in the model's labels"):
        scored_data(TASK_SHAPES["classification"], rows, request, config, {})
