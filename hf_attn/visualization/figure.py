"""Attention pictures: a figure of panels, rendered as self-contained HTML (inline CSS, no network, no script) or
as a PNG (matplotlib).

Two kinds of panel:
- `TextPanel`: the tokens of a text (or a concept set), each shaded by its weight: one row of a distribution;
- `HeatmapPanel`: a matrix of weights, rows × columns (queries × keys, hops × tokens, labels × tokens). In HTML a
  small one is a table (a cell per weight, its value on hover); one of more than `TABLE_CELLS` cells is an inline PNG
  (one pixel per weight, drawn large) between its row and column labels, which keeps a page for a 100-token text
  under a megabyte even with every layer of a Transformer.

Weights are drawn as they are, never renormalised: a panel's colour scale runs from 0 to its `scale` (the largest
weight of the panel unless given), and the legend states it. Padding never reaches a panel: the views cut every map
to the real tokens before building one.
"""

from __future__ import annotations

import base64
import html
import io
import math
import textwrap
import warnings
from dataclasses import dataclass, field
from pathlib import Path

# One hue for every figure (the weights' opacity carries the value).
_RGB = (200, 40, 40)
# A heatmap larger than this is an image in HTML (module docstring); the pixels of one of its cells.
TABLE_CELLS = 1000
_CELL_PX = 8
# `save_png` lays more panels than this out in a grid of `_GRID_COLUMNS` columns.
_SINGLE_COLUMN_PANELS = 6
_GRID_COLUMNS = 3


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
            raise ValueError(
                f"panel {self.title!r}: the matrix does not match its {len(self.row_labels)} × "
                f"{len(self.column_labels)} labels."
            )
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
        path.parent.mkdir(parents=True, exist_ok=True)
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
        columns = 1 if len(self.panels) <= _SINGLE_COLUMN_PANELS else _GRID_COLUMNS
        grid_rows = max(1, math.ceil(len(self.panels) / columns))
        heights = [
            max((_panel_height(panel) for panel in self.panels[row * columns : (row + 1) * columns]), default=1.0)
            for row in range(grid_rows)
        ]
        figure, axes = plt.subplots(
            grid_rows,
            columns,
            figsize=(10 if columns == 1 else 6 * columns, 0.8 + sum(heights)),
            squeeze=False,
            gridspec_kw={"height_ratios": heights},
        )
        for index, axis in enumerate(axes.flat):
            if index >= len(self.panels):
                axis.set_axis_off()
                continue
            panel = self.panels[index]
            if isinstance(panel, TextPanel):
                _draw_text(axis, panel, colours)
            else:
                image = axis.imshow(panel.matrix, cmap=colours, vmin=0.0, vmax=panel.scale, aspect="auto")
                _ticks(axis.set_xticks, panel.column_labels, rotation=60)
                _ticks(axis.set_yticks, panel.row_labels)
                figure.colorbar(image, ax=axis, fraction=0.025, pad=0.01)
            axis.set_title(panel.title, fontsize=10 if columns == 1 else 8, loc="left")
        figure.suptitle(textwrap.fill(self.title, 100 if columns == 1 else 160), fontsize=12)
        with warnings.catch_warnings():  # a crowded figure keeps matplotlib's layout rather than warn about it
            warnings.simplefilter("ignore", UserWarning)
            title_lines = textwrap.fill(self.title, 100 if columns == 1 else 160).count("\n") + 1
            figure.tight_layout(rect=(0, 0, 1, 1 - 0.3 * (title_lines + 0.5) / figure.get_figheight()))
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path, dpi=dpi)
        plt.close(figure)
        return path


def _panel_height(panel: Panel) -> float:
    """Inches of a panel in `save_png` (a heatmap grows with its rows, up to a limit)."""
    if isinstance(panel, TextPanel):
        return 1.0
    return 1.6 + min(0.3 * len(panel.row_labels), 6.0)  # the rows, and room for the column labels


def _ticks(set_ticks, labels: list[str], rotation: int = 0) -> None:
    """Every label up to 60 of them, else every k-th (smaller type as they grow)."""
    step = max(1, math.ceil(len(labels) / 60))
    positions = range(0, len(labels), step)
    set_ticks(
        positions, [labels[index] for index in positions], rotation=rotation, fontsize=8 if len(labels) <= 30 else 6
    )


def _alpha(weight: float, scale: float) -> float:
    return max(0.0, min(1.0, weight / scale)) if scale > 0 else 0.0


def _text_html(panel: TextPanel) -> str:
    spans = []
    for token, weight in zip(panel.tokens, panel.weights, strict=True):
        colour = f"rgba({_RGB[0]},{_RGB[1]},{_RGB[2]},{_alpha(weight, panel.scale):.4f})"
        spans.append(
            f'<span class="token" data-weight="{weight:.6g}" title="{weight:.4f}" '
            f'style="background-color:{colour}">{html.escape(token)}</span>'
        )
    return f'<div class="text">{" ".join(spans)}</div>'


def _heatmap_html(panel: HeatmapPanel) -> str:
    if len(panel.row_labels) * len(panel.column_labels) > TABLE_CELLS:
        return _heatmap_image_html(panel)
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


def _heatmap_image_html(panel: HeatmapPanel) -> str:
    """A large matrix as an inline PNG, a pixel per weight in the figures' colours (alpha over white, 256 levels),
    drawn `_CELL_PX` pixels a cell between its labels."""
    import numpy as np
    from PIL import Image

    levels = np.clip(np.asarray(panel.matrix, dtype=np.float64) / panel.scale, 0.0, 1.0)
    image = Image.fromarray(np.rint(levels * 255).astype(np.uint8), mode="L").convert("P")
    ramp = np.linspace(0.0, 1.0, 256)[:, None]
    palette = np.rint(255 * (1 - ramp) + ramp * np.asarray(_RGB)).astype(np.uint8)  # white → the hue
    image.putpalette(palette.flatten().tolist())
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=True)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    rows, columns = len(panel.row_labels), len(panel.column_labels)
    column_labels = "".join(f"<span>{html.escape(label)}</span>" for label in panel.column_labels)
    row_labels = "".join(f"<span>{html.escape(label)}</span>" for label in panel.row_labels)
    return (
        f'<div class="heatmap-image" style="--cell:{_CELL_PX}px"><div></div><div class="columns">{column_labels}'
        f'</div><div class="rows">{row_labels}</div><img alt="{rows} × {columns} weights" '
        f'data-rows="{rows}" data-columns="{columns}" width="{columns * _CELL_PX}" height="{rows * _CELL_PX}" '
        f'src="data:image/png;base64,{data}"></div>'
    )


def _legend_html(scale: float) -> str:
    return (
        f'<div class="legend" data-min="0" data-max="{scale:.6g}"><span>0</span>'
        f'<span class="bar"></span><span>{scale:.4g}</span></div>'
    )


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
.hf-attn-figure .heatmap-image{display:grid;grid-template-columns:auto auto;justify-content:start;font-size:7px}
.hf-attn-figure .heatmap-image .columns{display:flex}
.hf-attn-figure .heatmap-image .columns span{width:var(--cell);writing-mode:vertical-rl;overflow:hidden;
  max-height:80px;line-height:var(--cell)}
.hf-attn-figure .heatmap-image .rows{display:flex;flex-direction:column;align-items:flex-end;padding-right:3px}
.hf-attn-figure .heatmap-image .rows span{height:var(--cell);line-height:var(--cell);overflow:hidden;max-width:120px}
.hf-attn-figure .heatmap-image img{image-rendering:pixelated}
.hf-attn-figure .legend{font-size:11px;margin:4px 0;display:flex;align-items:center;gap:4px}
.hf-attn-figure .legend .bar{display:inline-block;width:120px;height:10px;
  background:linear-gradient(to right,rgba(200,40,40,0),rgba(200,40,40,1))}
"""
