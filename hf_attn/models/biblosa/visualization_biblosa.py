"""BiBloSA's block maps drawn (`hf_attn.visualization.views.register_level_view`): the intra-block maps of `/blocks`
as token × token matrices, one per direction (zero outside the blocks), and the inter-block maps of
`/block_summaries` as block × block matrices, each block named by its tokens. Registered when the row loads."""

from __future__ import annotations

import torch

from hf_attn.visualization.figure import HeatmapPanel
from hf_attn.visualization.views import register_level_view

from .kinds import BLOCK_SUMMARIES, BLOCKS

__all__ = ["block_panels", "block_summary_panels"]

DIRECTIONS = ("forward", "backward")


def block_panels(name: str, weights: torch.Tensor, tokens: list[str], size: int | None = None) -> list:
    """`(2, m, r, r)` intra-block maps as the `(T, T)` token matrix of each direction."""
    blocks, length = weights.shape[1], weights.shape[-1]
    n = len(tokens)
    panels = []
    for index, direction in enumerate(DIRECTIONS):
        full = torch.zeros(blocks * length, blocks * length)
        for block in range(blocks):
            span = slice(block * length, (block + 1) * length)
            full[span, span] = weights[index, block]
        panels.append(HeatmapPanel(f"{name}, {direction} (blocks of {length})", full[:n, :n].tolist(), tokens, tokens))
    return panels


def block_summary_panels(name: str, weights: torch.Tensor, tokens: list[str], size: int | None = None) -> list:
    """`(2, m, m)` inter-block maps, each block named by its tokens (`size`: r, the intra-block maps' last axis)."""
    block_length = size or 1
    blocks = -(-len(tokens) // block_length)
    labels = [" ".join(tokens[block * block_length : (block + 1) * block_length]) for block in range(blocks)]
    return [
        HeatmapPanel(f"{name}, {direction}", weights[index, :blocks, :blocks].tolist(), labels, labels)
        for index, direction in enumerate(DIRECTIONS)
    ]


register_level_view(BLOCKS.name, block_panels)
register_level_view(BLOCK_SUMMARIES.name, block_summary_panels)
