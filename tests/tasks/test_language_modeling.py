"""Language modelling (`hf_attn.tasks.language_modeling`): a head that generates continues each text, one that
does not (a biLM) says it has nothing to predict; the headline is the perplexity."""

from __future__ import annotations

import pytest

from hf_attn.tasks.heads import TASK_SHAPES
from tests.helpers import shape_heads, shape_predictions


@pytest.mark.parametrize(("architecture", "head"), shape_heads("language_modeling"))
def test_a_generating_head_continues_each_text_and_another_says_why_not(architecture, head):
    if not head.model_class.can_generate():
        with pytest.raises(ValueError, match=f"^{head.model_class.__name__} has nothing to predict from text"):
            shape_predictions("language_modeling", architecture, head)
        return
    _, results = shape_predictions("language_modeling", architecture, head)
    assert len(results) == 2 and all(isinstance(result["continuation"], str) for result in results)


def test_the_headline_is_the_perplexity():
    assert TASK_SHAPES["language_modeling"].headline({"perplexity": 41.234}) == "held-out perplexity 41.23"
