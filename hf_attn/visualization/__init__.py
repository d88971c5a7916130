"""Attention you can look at: `visualize(model, tokenizer, text)` returns an `AttentionFigure` with `.to_html()`
(self-contained), `.save_png(path)` (matplotlib) and a notebook display; `hf-attn visualize` writes either file."""

from .figure import AttentionFigure, HeatmapPanel, TextPanel
from .pictures import find_head, visualize

__all__ = ["AttentionFigure", "HeatmapPanel", "TextPanel", "find_head", "visualize"]
