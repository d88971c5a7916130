"""Sinusoidal position encodings (Vaswani et al. 2017, §3.5).

    PE(pos, 2i)   = sin(pos / 10000^(2i/d))
    PE(pos, 2i+1) = cos(pos / 10000^(2i/d))

Implementations differ in two ways, both needed to load their checkpoints:
- layout: the paper interleaves sin and cos by dimension; tensor2tensor, fairseq and Marian concatenate
  [sin(all frequencies) | cos(all frequencies)];
- timescale: the paper's frequencies are 1/10000^(2i/d) (also Marian's); tensor2tensor and fairseq use
  1/10000^(i/(d/2 − 1)), so the slowest frequency is exactly 1/10000.

Shape legend: ``P`` positions, ``D`` model dimension.
"""

from __future__ import annotations

import math

import torch


def sinusoidal_positions(
    num_positions: int,
    dim: int,
    layout: str = "interleaved",
    timescale: str = "paper",
    device: torch.device | str | None = None,
    positions: torch.Tensor | None = None,
) -> torch.Tensor:
    """The ``(P, D)`` float32 table of sinusoidal encodings for positions ``0 … P−1`` (computed in float64, as the
    reference implementations do, then rounded once), or for the integer ``positions (P,)`` given instead (the rows
    a decoding step needs, where the step is counted on the device).

    Args:
        num_positions: ``P``.
        dim: ``D``; an odd ``D`` gets a zero last column.
        layout: ``"interleaved"`` (paper) or ``"concatenated"`` ([sin | cos]: tensor2tensor, fairseq, Marian).
        timescale: ``"paper"`` (1/10000^(2i/D)) or ``"tensor2tensor"`` (1/10000^(i/(D/2−1)), fairseq too).
        device: where to compute it (default: the CPU, or where ``positions`` are).
        positions: the positions to encode, instead of ``0 … P−1`` (``num_positions`` is then ignored).
    """
    if layout not in ("interleaved", "concatenated") or timescale not in ("paper", "tensor2tensor"):
        raise ValueError(f"unknown sinusoid layout {layout!r} or timescale {timescale!r}")
    half = dim // 2
    device = positions.device if device is None and positions is not None else device
    index = torch.arange(half, dtype=torch.float64, device=device)
    if timescale == "paper":
        inverse_frequency = torch.pow(10000.0, -2.0 * index / dim)
    else:
        inverse_frequency = torch.exp(-math.log(10000.0) * index / max(half - 1, 1))
    if positions is None:
        positions = torch.arange(num_positions, dtype=torch.float64, device=device)
    else:
        num_positions = positions.numel()
        positions = positions.to(device=inverse_frequency.device, dtype=torch.float64)
    angles = positions[:, None] * inverse_frequency[None, :]  # (P, D/2)
    if layout == "interleaved":
        table = torch.stack([angles.sin(), angles.cos()], dim=-1).reshape(num_positions, 2 * half)
    else:
        table = torch.cat([angles.sin(), angles.cos()], dim=-1)
    if dim % 2:
        table = torch.nn.functional.pad(table, (0, 1))
    return table.to(torch.float32)
