"""AttentionXML's own label kind (`LABEL_TREE`: a label set, for a model trained level by level on a label tree),
registered here and named by the folder's row (`architecture.py`).

Shape legend: B texts, L labels.
"""

from __future__ import annotations

from hf_attn.data.kinds import MultiHot, register_label_kind

__all__ = ["LABEL_TREE", "LabelTreeLabels"]


class LabelTreeLabels(MultiHot):
    """The indicators of `multi_hot`, `(B, L)`, for a model trained level by level on a label tree (AttentionXML)."""

    name = "label_tree"


LABEL_TREE = register_label_kind(LabelTreeLabels())
