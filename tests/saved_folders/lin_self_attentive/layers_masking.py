"""Masking primitives shared by every architecture.

Shape legend: ``B`` batch, ``R`` rows of scores (hops, heads, queries), ``T`` positions being normalised over.
"""

from __future__ import annotations

import torch


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None, dim: int = -1) -> torch.Tensor:
    """Softmax of ``scores`` over ``dim`` restricted to the positions where ``mask`` is true.

    Masked positions get exactly 0. A row without a single unmasked position gives all zeros, never NaN:
    such rows are what an all-padding example produces, and a NaN there would poison the whole batch's gradient.

    Args:
        scores: attention logits, e.g. ``(B, R, T)``.
        mask: boolean or 0/1 tensor broadcastable to ``scores`` (e.g. ``(B, 1, T)``); ``None`` means no masking.
        dim: the dimension to normalise over.
    """
    if mask is None:
        return torch.softmax(scores, dim=dim)
    mask = mask.to(torch.bool)
    # The most negative finite value, not -inf: exp(min - max) is exactly 0 whenever a row has a real score,
    # and a fully masked row stays finite (uniform) before the multiplication below zeroes it.
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return torch.softmax(scores, dim=dim) * mask
