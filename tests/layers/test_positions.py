"""Sinusoidal position encodings (`hf_attn.layers.positions`, Vaswani et al. 2017, §3.5): the paper's formula in
either layout and timescale the reference implementations use, and the rows of given positions."""

from __future__ import annotations

import math

import pytest
import torch

from hf_attn.layers.positions import sinusoidal_positions


def test_the_interleaved_table_is_the_papers_formula():
    table = sinusoidal_positions(7, 6)
    assert table.shape == (7, 6) and table.dtype == torch.float32
    for position in range(7):
        for i in range(3):
            angle = position / 10000 ** (2 * i / 6)
            assert table[position, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-7)
            assert table[position, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-7)


def test_the_concatenated_layout_and_the_tensor2tensor_timescale():
    interleaved, concatenated = sinusoidal_positions(5, 8), sinusoidal_positions(5, 8, layout="concatenated")
    assert torch.equal(concatenated, torch.cat([interleaved[:, 0::2], interleaved[:, 1::2]], dim=1))
    t2t = sinusoidal_positions(5, 8, layout="concatenated", timescale="tensor2tensor")
    assert t2t[3, 1].item() == pytest.approx(math.sin(3 * math.exp(-math.log(10000.0) / 3)), abs=1e-7)


def test_given_positions_odd_widths_and_unknown_names():
    table = sinusoidal_positions(10, 5)
    assert torch.equal(table[:, -1], torch.zeros(10))  # an odd D: a zero last column
    assert torch.equal(sinusoidal_positions(0, 5, positions=torch.tensor([9, 2])), table[[9, 2]])
    with pytest.raises(ValueError, match="unknown sinusoid layout 'stacked'"):
        sinusoidal_positions(3, 4, layout="stacked")
