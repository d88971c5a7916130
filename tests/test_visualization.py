"""Attention pictures over the registry: every head whose inputs have a view is drawn as self-contained HTML (one token
element per real token, weights as computed, a legend) and as a non-blank PNG; the others say they have no view yet.
(A real-browser check of the HTML is still to come.)"""

from __future__ import annotations

import itertools
import re

import pytest
import torch

from hf_attn.registry import ARCHITECTURES
from hf_attn.tokenization import (
    ConceptSource,
    train_concept_tokenizer,
    train_document_tokenizer,
    train_word_level_tokenizer,
)
from hf_attn.visualization import AttentionFigure, TextPanel, visualize
from hf_attn.visualization.views import SUPPORTED_INPUTS
from tests.helpers import tiny_config

TEXTS = ["the food was great and the service was awful", "a fine meal . we left at nine ."]
TOKENIZERS = {
    "word_level": lambda: train_word_level_tokenizer(TEXTS),
    "document": lambda: train_document_tokenizer(TEXTS),
    "concepts": lambda: train_concept_tokenizer(TEXTS, concept_source=ConceptSource({"food": [("meal", 1.0)]})),
}
DRAWN = [
    pytest.param(architecture, head, id=f"{name}-{head.model_class.__name__}")
    for name, architecture in ARCHITECTURES.items()
    for head in architecture.heads
    if head.inputs in SUPPORTED_INPUTS and head.attention_fields and architecture.tokenizer in TOKENIZERS
]


def build(architecture, head):
    tokenizer = TOKENIZERS[architecture.tokenizer]()
    torch.manual_seed(0)
    config = tiny_config(architecture, vocab_size=max(len(tokenizer), architecture.tiny_config["vocab_size"]))
    return head.model_class(config).eval(), tokenizer


@pytest.mark.parametrize(("architecture", "head"), DRAWN)
def test_every_drawable_head_gives_html_and_png(architecture, head, tmp_path):
    model, tokenizer = build(architecture, head)
    pair = "the food was great" if "pair" in head.inputs else None
    figure = visualize(model, tokenizer, TEXTS[0], pair=pair)
    assert figure.panels
    page = figure.to_html()
    assert "http" not in page and "<script" not in page  # self-contained, nothing fetched
    text_panels = [panel for panel in figure.panels if isinstance(panel, TextPanel)]
    spans = re.findall(r'<span class="token" data-weight="([^"]+)"', page)
    assert len(spans) == sum(len(panel.tokens) for panel in text_panels)
    assert "[PAD]" not in page  # padding is never drawn as a token
    assert page.count('class="legend"') == len(figure.panels)
    png = figure.save_png(tmp_path / "figure.png")
    import matplotlib.image

    pixels = matplotlib.image.imread(png)
    assert pixels.shape[0] > 100 and pixels.std() > 0.01  # not blank


def test_weights_are_drawn_as_computed_and_long_texts_stay_small():
    architecture = ARCHITECTURES["lin_self_attentive"]
    model, tokenizer = build(architecture, architecture.heads[0])
    text = " ".join(["the food was great and the service was awful"] * 12)[:600]
    figure = visualize(model, tokenizer, text)
    output = model(**tokenizer([text], return_tensors="pt"))
    hops = output.hop_attentions[0]
    summed = next(panel for panel in figure.panels if "summed" in panel.title)
    torch.testing.assert_close(torch.tensor(summed.weights), hops.sum(0), rtol=0, atol=1e-6)  # not renormalised
    assert len(figure.to_html().encode()) < 1_000_000


def test_inputs_without_a_view_say_so():
    architecture = ARCHITECTURES["vaswani_transformer"]
    head = architecture.heads[0]
    with pytest.raises(NotImplementedError, match="No attention view"):
        visualize(head.model_class(tiny_config(architecture)), TOKENIZERS["word_level"](), "a text")


def test_figure_checks_and_notebook_display():
    with pytest.raises(ValueError, match="2 tokens but 1 weights"):
        TextPanel("t", ["a", "b"], [1.0])
    figure = AttentionFigure("title", [TextPanel("t", ["a", "<b>"], [0.25, 0.75])])
    assert "&lt;b&gt;" in figure._repr_html_() and 'data-max="0.75"' in figure.to_html()


def test_cli_writes_html_and_png(tmp_path, capsys):
    from hf_attn.cli import main

    architecture = ARCHITECTURES["biblosa"]
    model, tokenizer = build(architecture, architecture.heads[0])
    model.save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    for suffix in ("html", "png"):
        main(["visualize", str(tmp_path / "model"), "the food was great", "--out", str(tmp_path / f"out.{suffix}")])
        assert (tmp_path / f"out.{suffix}").stat().st_size > 500
    with pytest.raises(SystemExit, match=r"--out must end in \.html or \.png"):
        main(["visualize", str(tmp_path / "model"), "x", "--out", str(tmp_path / "out.svg")])


def _chromium() -> str:
    import shutil

    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.skip("Chromium is not installed: `make test` installs Debian's chromium where it can (root, apt-get)")
    return path


def test_the_html_in_a_real_browser(tmp_path):
    """Headless Chromium opens the page: one element per real token, opacity growing with the weight, no padding,
    the legend's scale; its screenshot is not blank."""
    import subprocess
    from html.parser import HTMLParser

    architecture = ARCHITECTURES["lin_self_attentive"]
    model, tokenizer = build(architecture, architecture.heads[0])
    figure = visualize(model, tokenizer, TEXTS[0])
    page = figure.save_html(tmp_path / "figure.html")
    browser = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
    dom = subprocess.run([*browser, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120).stdout

    class Tokens(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.tokens, self.legends, self._open = [], [], False

        def handle_starttag(self, tag, attrs):
            attrs = dict(attrs)
            if tag == "span" and attrs.get("class") == "token":
                alpha = float(re.search(r"rgba\([^)]*,\s*([\d.]+)\)", attrs["style"])[1])
                self.tokens.append([float(attrs["data-weight"]), alpha, ""])
                self._open = True
            elif "legend" in (attrs.get("class") or ""):
                self.legends.append(float(attrs["data-max"]))

        def handle_data(self, data):
            if self._open:
                self.tokens[-1][2] += data

        def handle_endtag(self, tag):
            self._open = False

    parsed = Tokens()
    parsed.feed(dom)
    text_panels = [panel for panel in figure.panels if isinstance(panel, TextPanel)]
    assert [token for _, _, token in parsed.tokens] == [token for panel in text_panels for token in panel.tokens]
    assert len(parsed.tokens) == sum(len(panel.tokens) for panel in text_panels) > 0
    start = 0
    for panel in text_panels:  # within a panel (one scale), a larger weight is never lighter
        ordered = sorted(parsed.tokens[start : start + len(panel.tokens)])
        start += len(panel.tokens)
        assert all(lighter[1] <= darker[1] + 1e-9 for lighter, darker in itertools.pairwise(ordered))
    assert "[PAD]" not in dom
    assert parsed.legends == pytest.approx([panel.scale for panel in figure.panels], rel=1e-5)
    screenshot = tmp_path / "screenshot.png"
    subprocess.run([*browser, f"--screenshot={screenshot}", "--window-size=1000,800", page.as_uri()],
                   capture_output=True, timeout=120)  # fmt: skip
    import matplotlib.image

    pixels = matplotlib.image.imread(screenshot)
    assert pixels.std() > 0.01  # the page drew something


def test_inter_block_labels_follow_the_models_block_length():
    """9 tokens in blocks of 4: three blocks of 4, 4 and 1 tokens (the block length is read from the block maps, not
    guessed from the token count)."""
    architecture = ARCHITECTURES["biblosa"]
    tokenizer = TOKENIZERS["word_level"]()
    torch.manual_seed(0)
    head = architecture.heads[0]
    model = head.model_class(tiny_config(architecture, vocab_size=len(tokenizer), block_length=4)).eval()
    figure = visualize(model, tokenizer, TEXTS[0])
    inter = next(panel for panel in figure.panels if panel.title.startswith("inter block attentions, forward"))
    assert inter.row_labels == ["the food was great", "and the service was", "awful"]
