"""BiBloSA's mask levels (Shen et al., ICLR 2018, §3): what the keys of its block attention maps are.

    attention_mask/blocks           intra-block maps (B, 2, m, r, r): the tokens cut into m blocks of r, direction 0
                                    reading the real tokens of the query's block strictly before it, direction 1
                                    strictly after (the masked self-attention of §3.1 within each block)
    attention_mask/block_summaries  inter-block maps (B, 2, m, m): likewise over the blocks that hold a real token
                                    (§3.2); r is the `/blocks` maps' last axis (`sized_by`)

Registered when the row loads (`hf_attn.data.masks.register_mask_level`); the common tests check the maps against
these masks, and the views draw them (`visualization_biblosa.py`).
"""

from __future__ import annotations

import torch

from hf_attn.data.masks import MaskLevel, register_mask_level

__all__ = ["BLOCKS", "BLOCK_SUMMARIES"]


class Blocks(MaskLevel):
    """Keys of an intra-block map: the tokens of the query's block, before it (direction 0) or after it (1)."""

    name = "blocks"

    def key_mask(self, mask, shape, size):
        return _directional(self._units(mask, shape[2], shape[-1]), shape)

    @staticmethod
    def _units(mask: torch.Tensor, blocks: int, block_length: int) -> torch.Tensor:
        """The token mask `(B, T)` cut into `(B, m, r)` blocks (padded with masked tokens)."""
        padded = torch.zeros(mask.size(0), max(blocks * block_length, mask.size(1)), dtype=torch.bool)
        padded[:, : mask.size(1)] = mask
        return padded[:, : blocks * block_length].view(mask.size(0), blocks, block_length)


class BlockSummaries(Blocks):
    """Keys of an inter-block map: the blocks that hold a real token, before the query's block or after it."""

    name = "block_summaries"
    sized_by = "blocks"  # r: the intra-block maps' last axis

    def key_mask(self, mask, shape, size):
        units = self._units(mask, shape[2], size).any(dim=-1)[:, None, :]  # (B, 1, m): one sequence of blocks
        return _directional(units, shape)


def _directional(units: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """`(…, L)` unit masks -> the two directions' `(B, 2, …, L, L)` key masks: key j strictly before query i, then
    strictly after; both real."""
    positions = torch.arange(units.size(-1))
    before = positions[None, :] < positions[:, None]
    both = units[..., :, None] & units[..., None, :]  # (…, L, L)
    return torch.stack([both & before, both & before.T], dim=1).reshape(shape)


BLOCKS = register_mask_level(Blocks())
BLOCK_SUMMARIES = register_mask_level(BlockSummaries())
