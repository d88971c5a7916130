"""The attention beside Integrated Gradients in a head's attention figure (`hf_attn.visualization.side_by_side`)."""

from __future__ import annotations

import pytest

from hf_attn.registry.table import ARCHITECTURES
from hf_attn.visualization.pictures import visualize
from tests.helpers import tiny_model_and_tokenizer

pytest.importorskip("captum", reason='the faithfulness extra: pip install "hf_attn[faithfulness]"')

LIN = ARCHITECTURES["lin_self_attentive"]


def test_the_picture_sets_the_attention_beside_integrated_gradients():
    """`visualize(..., integrated_gradients=True)`: two more panels over the same tokens, the attention's importance
    of each and its (positive) Integrated Gradients attribution, in the HTML view too."""
    model, tokenizer = tiny_model_and_tokenizer(LIN, LIN.heads[0])
    text = "the food was great and the service was awful"
    plain = visualize(model, tokenizer, text)
    figure = visualize(model, tokenizer, text, integrated_gradients=True)
    attention, gradients = figure.panels[len(plain.panels) :]
    assert attention.title == "attention, one importance per token" and gradients.title.startswith("Integrated")
    assert attention.tokens == gradients.tokens == text.split()
    assert min(gradients.weights) >= 0 and max(gradients.weights) > 0
    html = figure.to_html()
    assert "one importance per token" in html and "Integrated Gradients toward the prediction" in html


def test_a_head_the_panels_cannot_draw_is_named_before_its_view_runs():
    """A few-shot head's query is read against a support set, which the panels do not draw: the argument is named
    (and not a missing `support`, which the view would ask for first)."""
    hapn = ARCHITECTURES["hapn"]
    model, tokenizer = tiny_model_and_tokenizer(hapn, hapn.heads[0])
    with pytest.raises(
        ValueError, match=r"^integrated_gradients: HapnForFewShotClassification reads its query against"
    ):
        visualize(model, tokenizer, "a query", integrated_gradients=True)
