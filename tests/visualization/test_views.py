"""The views that draw a head's maps (`hf_attn.visualization.views`): the generic view draws every map a head of
one text returns, over its real tokens, with the prediction in the caption for a class head; a text too long to
draw and inputs no view can draw are refused by name."""

from __future__ import annotations

import re

import pytest
import torch

from hf_attn.data.kinds import CLASS
from hf_attn.registry.table import ARCHITECTURES
from hf_attn.visualization.views import MAX_TOKENS, encode, generic_view
from tests.helpers import TEXTS, tiny_model_and_tokenizer

HEADS = [
    pytest.param(architecture, head, id=f"{name}-{head.model_class.__name__}")
    for name, architecture in ARCHITECTURES.items()
    for head in architecture.heads
    if head.attention_fields and head.inputs.viewable and not head.inputs.pair and head.labels is CLASS
]


@pytest.mark.parametrize(("architecture", "head"), HEADS)
def test_the_generic_view_draws_the_heads_maps_and_its_prediction(architecture, head):
    model, tokenizer = tiny_model_and_tokenizer(architecture, head)
    with torch.no_grad():
        panels, caption = generic_view(model, head, tokenizer, TEXTS[0])
    assert panels and caption.startswith("prediction: ") and caption.endswith("weights as the model computes them")
    label = caption.removeprefix("prediction: ").rsplit(" (", 1)[0]
    assert label in model.config.id2label.values()


def test_a_text_too_long_to_draw_is_refused_and_so_are_inputs_without_a_view():
    architecture, head = next((row, head) for row in ARCHITECTURES.values() for head in row.heads
                              if head.inputs.viewable and not head.inputs.pair)  # fmt: skip
    _, tokenizer = tiny_model_and_tokenizer(architecture, head)
    with pytest.raises(ValueError, match=rf"too long to draw: \d+ tokens \(at most {MAX_TOKENS}\)"):
        encode(head, tokenizer, " ".join(["food"] * (MAX_TOKENS + 10)), None)
    blind = next((row, head) for row in ARCHITECTURES.values() for head in row.heads if not head.inputs.viewable)
    with pytest.raises(NotImplementedError, match=re.escape(f"No attention view for {blind[0].display_name}'s")):
        generic_view(None, blind[1], tokenizer, TEXTS[0])
