"""Attention you can look at: figures (`AttentionFigure` with `.to_html()` (self-contained), `.save_png(path)`
(matplotlib) and a notebook display) and the views that draw a head's maps into them. `hf_attn.visualize(model,
tokenizer, text)` (`hf_attn.visualization.pictures`) picks a model's view; `hf-attn visualize` writes either file.
This package imports no registry: the model folders' own views build on it."""

from .figure import AttentionFigure, HeatmapPanel, TextPanel

__all__ = ["AttentionFigure", "HeatmapPanel", "TextPanel"]
