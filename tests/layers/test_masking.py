"""Masked softmax (hf_attn.layers.masking): the softmax over the real positions, zero (never NaN) on an empty row."""

from __future__ import annotations

import torch

from hf_attn.layers import masked_softmax


def test_masked_softmax_equals_softmax_over_unmasked_positions():
    scores = torch.randn(2, 3, 6)
    mask = torch.tensor([[1, 1, 1, 0, 0, 0], [1, 0, 1, 1, 1, 1]], dtype=torch.bool)[:, None, :]
    weights = masked_softmax(scores, mask)
    assert torch.all(weights[:, :, :][~mask.expand_as(weights)] == 0)
    expected = torch.softmax(scores[0, :, :3], dim=-1)
    torch.testing.assert_close(weights[0, :, :3], expected, rtol=0, atol=1e-7)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 3))


def test_masked_softmax_all_masked_row_is_zero_not_nan_and_has_finite_gradient():
    scores = torch.randn(2, 4, requires_grad=True)
    mask = torch.tensor([[0, 0, 0, 0], [1, 1, 0, 0]], dtype=torch.bool)
    weights = masked_softmax(scores, mask)
    assert torch.equal(weights[0], torch.zeros(4))
    (weights * torch.arange(4.0)).sum().backward()
    assert torch.isfinite(scores.grad).all()
    assert torch.equal(scores.grad[0], torch.zeros(4))


def test_masked_softmax_without_mask_and_in_half_precision():
    scores = torch.randn(3, 5)
    torch.testing.assert_close(masked_softmax(scores, None), torch.softmax(scores, -1))
    half = masked_softmax(scores.half(), torch.zeros(3, 5, dtype=torch.bool))
    assert torch.isfinite(half).all() and half.abs().sum() == 0
