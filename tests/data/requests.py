"""The canonical rows of two splits for a test, from keywords: the `DataRequest` a command would build."""

from __future__ import annotations

from typing import Any

from hf_attn.data.request import Columns, DataRequest
from hf_attn.data.rows import canonical_rows
from hf_attn.data.task_data import TaskData, get_task_layout


def canonical_task_data(
    train: Any,
    held_out: Any,
    shape: str,
    text_column: str = "text",
    label_column: str | None = None,
    workers: int | None = None,
    split_names: tuple[str, str] = ("train", "held-out"),
) -> TaskData:
    """`canonical_rows(...)` of `train` and `held_out` in the task shape `shape`."""
    request = DataRequest(
        "rows", columns=Columns(text=text_column, label=label_column), workers=workers, split_names=split_names
    )
    return canonical_rows(train, held_out, get_task_layout(shape), request, {})
