"""Attention pictures: a figure of panels, rendered as self-contained HTML (inline CSS, no network, no script) or
as a PNG (matplotlib).

Two kinds of panel:
- `TextPanel`: the tokens of a text (or a concept set), each shaded by its weight: one row of a distribution;
- `HeatmapPanel`: a matrix of weights, rows × columns (queries × keys, hops × tokens, labels × tokens).

Weights are drawn as they are, never renormalised: a panel's colour scale runs from 0 to its `scale` (the largest
weight of the panel unless given), and the legend states it. Padding never reaches a panel: the views cut every map
to the real tokens before building one.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path

# One hue for every figure (the weights' opacity carries the value).
_RGB = (200, 40, 40)


@dataclass
class TextPanel:
    """Tokens shaded by their weights (one weight per token)."""

    title: str
    tokens: list[str]
    weights: list[float]
    scale: float | None = None

    def __post_init__(self) -> None:
        if len(self.tokens) != len(self.weights):
            raise ValueError(f"{len(self.tokens)} tokens but {len(self.weights)} weights in panel {self.title!r}.")
        self.weights = [float(weight) for weight in self.weights]
        self.scale = float(self.scale or max(self.weights, default=0.0) or 1.0)


@dataclass
class HeatmapPanel:
    """A matrix of weights with its row and column labels."""

    title: str
    matrix: list[list[float]]
    row_labels: list[str]
    column_labels: list[str]
    scale: float | None = None

    def __post_init__(self) -> None:
        self.matrix = [[float(value) for value in row] for row in self.matrix]
        if len(self.matrix) != len(self.row_labels) or any(len(row) != len(self.column_labels) for row in self.matrix):
            raise ValueError(f"panel {self.title!r}: the matrix does not match its {len(self.row_labels)} × "
                             f"{len(self.column_labels)} labels.")  # fmt: skip
        self.scale = float(self.scale or max((max(row, default=0.0) for row in self.matrix), default=0.0) or 1.0)


Panel = TextPanel | HeatmapPanel


@dataclass
class AttentionFigure:
    """A model's attention for one input: `to_html()`, `save_html(path)`, `save_png(path)`, and `_repr_html_` for
    notebooks."""

    title: str
    panels: list[Panel] = field(default_factory=list)
    caption: str = ""

    # HTML ----------------------------------------------------------------------------------------------------------

    def to_html(self) -> str:
        """A self-contained HTML page (inline CSS; nothing is fetched)."""
        return (
            '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>'
            f"{html.escape(self.title)}</title><style>{_CSS}</style></head><body>{self._body()}</body></html>\n"
        )

    def _repr_html_(self) -> str:
        return f"<style>{_CSS}</style>{self._body()}"

    def save_html(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(self.to_html(), encoding="utf-8")
        return path

    def _body(self) -> str:
        parts = [f'<div class="hf-attn-figure"><h2>{html.escape(self.title)}</h2>']
        if self.caption:
            parts.append(f'<p class="caption">{html.escape(self.caption)}</p>')
        for index, panel in enumerate(self.panels):
            parts.append(f'<section class="panel" data-panel="{index}"><h3>{html.escape(panel.title)}</h3>')
            parts.append(_text_html(panel) if isinstance(panel, TextPanel) else _heatmap_html(panel))
            parts.append(_legend_html(panel.scale))
            parts.append("</section>")
        parts.append("</div>")
        return "".join(parts)

    # PNG -----------------------------------------------------------------------------------------------------------

    def save_png(self, path: str | Path, dpi: int = 120) -> Path:
        """Draws the panels with matplotlib (Agg, no display) into a PNG file."""
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
        from matplotlib.colors import LinearSegmentedColormap

        colours = LinearSegmentedColormap.from_list("hf_attn", [(1, 1, 1), tuple(c / 255 for c in _RGB)])
        heights = [
            1.0 if isinstance(panel, TextPanel) else 0.6 + 0.35 * len(panel.row_labels) for panel in self.panels
        ]
        figure, axes = plt.subplots(
            len(self.panels), 1, figsize=(10, 0.8 + sum(heights)), squeeze=False,
            gridspec_kw={"height_ratios": heights or [1]},
        )  # fmt: skip
        for axis, panel in zip(axes[:, 0], self.panels, strict=True):
            if isinstance(panel, TextPanel):
                _draw_text(axis, panel, colours)
            else:
                image = axis.imshow(panel.matrix, cmap=colours, vmin=0.0, vmax=panel.scale, aspect="auto")
                axis.set_xticks(range(len(panel.column_labels)), panel.column_labels, rotation=60, fontsize=8)
                axis.set_yticks(range(len(panel.row_labels)), panel.row_labels, fontsize=8)
                figure.colorbar(image, ax=axis, fraction=0.025, pad=0.01)
            axis.set_title(panel.title, fontsize=10, loc="left")
        figure.suptitle(self.title, fontsize=12)
        figure.tight_layout()
        path = Path(path)
        figure.savefig(path, dpi=dpi)
        plt.close(figure)
        return path


def _alpha(weight: float, scale: float) -> float:
    return max(0.0, min(1.0, weight / scale)) if scale > 0 else 0.0


def _text_html(panel: TextPanel) -> str:
    spans = []
    for token, weight in zip(panel.tokens, panel.weights, strict=True):
        colour = f"rgba({_RGB[0]},{_RGB[1]},{_RGB[2]},{_alpha(weight, panel.scale):.4f})"
        spans.append(f'<span class="token" data-weight="{weight:.6g}" title="{weight:.4f}" '
                     f'style="background-color:{colour}">{html.escape(token)}</span>')  # fmt: skip
    return f'<div class="text">{" ".join(spans)}</div>'


def _heatmap_html(panel: HeatmapPanel) -> str:
    head = "".join(f'<th class="column">{html.escape(label)}</th>' for label in panel.column_labels)
    rows = []
    for label, values in zip(panel.row_labels, panel.matrix, strict=True):
        cells = "".join(
            f'<td class="cell" data-weight="{value:.6g}" title="{value:.4f}" style="background-color:'
            f'rgba({_RGB[0]},{_RGB[1]},{_RGB[2]},{_alpha(value, panel.scale):.4f})"></td>'
            for value in values
        )
        rows.append(f'<tr><th class="row">{html.escape(label)}</th>{cells}</tr>')
    return f'<table class="heatmap"><tr><th></th>{head}</tr>{"".join(rows)}</table>'


def _legend_html(scale: float) -> str:
    return (f'<div class="legend" data-min="0" data-max="{scale:.6g}"><span>0</span>'
            f'<span class="bar"></span><span>{scale:.4g}</span></div>')  # fmt: skip


def _draw_text(axis, panel: TextPanel, colours) -> None:
    """Tokens as coloured boxes, left to right, wrapping at the axis's width."""
    axis.set_axis_off()
    x, y, line = 0.0, 0.75, 0.45
    for token, weight in zip(panel.tokens, panel.weights, strict=True):
        width = 0.012 * (len(token) + 1)
        if x + width > 1.0:
            x, y = 0.0, y - line
        box = {"facecolor": colours(_alpha(weight, panel.scale)), "edgecolor": "none", "pad": 1.5}
        axis.text(x, y, token, fontsize=9, va="center", transform=axis.transAxes, bbox=box)
        x += width


_CSS = """
.hf-attn-figure{font-family:sans-serif;margin:12px;color:#222}
.hf-attn-figure h2{font-size:18px;margin:4px 0}.hf-attn-figure h3{font-size:14px;margin:10px 0 4px}
.hf-attn-figure .caption{font-size:12px;color:#555}
.hf-attn-figure .text{line-height:2;font-size:15px}
.hf-attn-figure .token{padding:2px 3px;border-radius:3px}
.hf-attn-figure table.heatmap{border-collapse:collapse;font-size:11px}
.hf-attn-figure td.cell{width:18px;height:18px;border:1px solid #eee}
.hf-attn-figure th.column{writing-mode:vertical-rl;font-weight:normal}
.hf-attn-figure th.row{text-align:right;font-weight:normal;padding-right:4px}
.hf-attn-figure .legend{font-size:11px;margin:4px 0;display:flex;align-items:center;gap:4px}
.hf-attn-figure .legend .bar{display:inline-block;width:120px;height:10px;
  background:linear-gradient(to right,rgba(200,40,40,0),rgba(200,40,40,1))}
"""
