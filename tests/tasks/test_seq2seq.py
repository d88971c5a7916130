"""Sequence to sequence (`hf_attn.tasks.seq2seq`): scored on `generate()`'s outputs, `predict` gives each source its
generated text, and the headline is exact match and BLEU."""

from __future__ import annotations

import pytest

from hf_attn.tasks.heads import TASK_SHAPES
from tests.helpers import shape_heads, shape_predictions


@pytest.mark.parametrize(("architecture", "head"), shape_heads("seq2seq"))
def test_each_source_gets_its_generated_text(architecture, head):
    shape = TASK_SHAPES["seq2seq"]
    assert shape.generates(head)
    _, results = shape_predictions("seq2seq", architecture, head)
    assert len(results) == 2 and all(isinstance(result["translation"], str) for result in results)


def test_the_headline_is_exact_match_and_bleu():
    assert TASK_SHAPES["seq2seq"].headline({"exact_match": 0.25, "bleu": 31.456}) == (
        "held-out exact match 0.2500, BLEU 31.46"
    )
