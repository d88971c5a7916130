"""Token classification (`hf_attn.tasks.token_classification`): `predict` tags each word of a text, in order, with
a tag the model knows."""

from __future__ import annotations

import pytest

from tests.helpers import TEXTS, shape_heads, shape_predictions


@pytest.mark.parametrize(("architecture", "head"), shape_heads("token_classification"))
def test_each_word_gets_a_known_tag_in_order(architecture, head):
    model, results = shape_predictions("token_classification", architecture, head)
    for text, result in zip(TEXTS, results, strict=True):
        words = [word for word, _ in result["tags"]]
        assert words == text.split()[: len(words)] and words  # the words as written, a tag each
        assert {tag for _, tag in result["tags"]} <= set(model.config.id2label.values())
