"""The figures (`hf_attn.visualization.figure`): panels that check their tokens and weights, a page escaped for a
notebook, and, in headless Chromium, one element per real token whose opacity grows with its weight, the legends'
scales and large heatmaps as images."""

from __future__ import annotations

import pytest

from hf_attn import visualize
from hf_attn.registry.table import ARCHITECTURES
from hf_attn.visualization import AttentionFigure, HeatmapPanel, TextPanel
from tests.helpers import TEXTS, check_in_browser, tiny_model_and_tokenizer
from tests.visualization.test_pictures import LONG_TEXT


def test_figure_checks_and_notebook_display():
    with pytest.raises(ValueError, match="2 tokens but 1 weights"):
        TextPanel("t", ["a", "b"], [1.0])
    figure = AttentionFigure("title", [TextPanel("t", ["a", "<b>"], [0.25, 0.75])])
    assert "&lt;b&gt;" in figure._repr_html_() and 'data-max="0.75"' in figure.to_html()


def test_the_html_in_a_real_browser(tmp_path):
    """A page with text panels and a heatmap large enough to be an image (the LSTMN's tape over 100 tokens)."""
    architecture = ARCHITECTURES["lstmn"]
    model, tokenizer = tiny_model_and_tokenizer(architecture, architecture.heads[0])
    figure = visualize(model, tokenizer, LONG_TEXT)
    assert any(isinstance(panel, HeatmapPanel) for panel in figure.panels)
    check_in_browser(figure.save_html(tmp_path / "figure.html"), figure, tmp_path)
    lin = ARCHITECTURES["lin_self_attentive"]
    model, tokenizer = tiny_model_and_tokenizer(lin, lin.heads[0])
    figure = visualize(model, tokenizer, TEXTS[0])
    check_in_browser(figure.save_html(tmp_path / "lin.html"), figure, tmp_path)
