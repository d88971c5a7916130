"""Additive attention pooling (hf_attn.layers.attention): uniform at the start, the equations, the additive mask."""

from __future__ import annotations

import torch
from torch import nn

from hf_attn.layers import AdditiveAttentionPooling


def test_additive_attention_pooling_starts_uniform():
    pooling = AdditiveAttentionPooling(input_size=6, attention_size=5, num_hops=3)
    _, weights = pooling(torch.randn(2, 4, 6), torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]]))
    torch.testing.assert_close(weights[0], torch.full((3, 4), 0.25))
    torch.testing.assert_close(weights[1, :, :2], torch.full((3, 2), 0.5))


def test_additive_attention_pooling_matches_the_equations():
    torch.manual_seed(0)
    pooling = AdditiveAttentionPooling(input_size=6, attention_size=5, num_hops=3, bias=True)
    nn.init.normal_(pooling.context)
    hidden = torch.randn(2, 4, 6)
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])
    pooled, weights = pooling(hidden, mask)
    # e = W_2 tanh(W_1 h + b_1), α = softmax over unmasked tokens, m = Σ α h  — recomputed by hand for example 1.
    scores = pooling.context @ torch.tanh(
        pooling.projection.weight @ hidden[1, :2].T + pooling.projection.bias[:, None]
    )
    alpha = torch.softmax(scores, dim=-1)  # (R, 2)
    torch.testing.assert_close(weights[1, :, :2], alpha)
    assert torch.equal(weights[1, :, 2:], torch.zeros(3, 2))
    torch.testing.assert_close(pooled[1], alpha @ hidden[1, :2])
    assert pooled.shape == (2, 3, 6) and weights.shape == (2, 3, 4)
    values = torch.randn(2, 4, 2)  # scored by `hidden`, pooled from other features
    pooled_values, same_weights = pooling(hidden, mask, values=values)
    torch.testing.assert_close(same_weights, weights)
    torch.testing.assert_close(pooled_values[1], alpha @ values[1, :2])


def test_additive_attention_pooling_additive_mask_matches_exact_mask_except_on_empty_rows():
    torch.manual_seed(0)
    exact = AdditiveAttentionPooling(4, 3, num_hops=2, bias=False)
    nn.init.normal_(exact.context)
    additive = AdditiveAttentionPooling(4, 3, num_hops=2, bias=False, additive_mask_value=-10000.0)
    additive.load_state_dict(exact.state_dict())
    hidden, mask = torch.randn(3, 5, 4), torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [0, 0, 0, 0, 0]])
    (pooled_exact, weights_exact), (pooled_add, weights_add) = exact(hidden, mask), additive(hidden, mask)
    torch.testing.assert_close(weights_exact[:2], weights_add[:2])
    torch.testing.assert_close(pooled_exact[:2], pooled_add[:2])
    assert torch.equal(weights_exact[2], torch.zeros(2, 5))  # exact masking: an empty row attends to nothing
    assert torch.equal(pooled_exact[2], torch.zeros(2, 4))
    torch.testing.assert_close(weights_add[2].sum(-1), torch.ones(2))  # the original's -10000: uniform-ish, finite
