"""Deprecated: the task shapes moved to `hf_attn.tasks` (their data side to `hf_attn.data.task_data`). This alias
keeps `from hf_attn.data.shapes import ...` working, with a `DeprecationWarning`; it sits in the tasks layer
(tests/test_imports.py) and nothing in hf_attn imports it."""

import warnings

from ..tasks import TASK_SHAPES, TaskData, TaskShape, get_task_shape, score_evidence_attention, token_accuracy_at

warnings.warn(
    "hf_attn.data.shapes is deprecated: import the task shapes from hf_attn.tasks.", DeprecationWarning, stacklevel=2
)

__all__ = ["TASK_SHAPES", "TaskData", "TaskShape", "get_task_shape", "score_evidence_attention", "token_accuracy_at"]
