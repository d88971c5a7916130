"""The prototypical networks' shared blocks (`hf_attn.layers.few_shot`): position ids as the FewRel loader builds
them, prototypes as the mean of the real shots, the (weighted) squared distance as logits, and entity positions
outside their text refused naming the argument."""

from __future__ import annotations

import pytest
import torch

from hf_attn.layers.few_shot import check_entity_positions, mean_prototypes, squared_distance_logits


def test_position_ids_follow_the_original_loader():
    """pos = j − e + L for every token j (padding included), the entity clamped to L − 1, ids in [1, 2L − 1]."""
    from hf_attn.layers.few_shot import relative_positions

    positions = relative_positions(torch.tensor([[2, 0], [15, 3]]), length=5, max_distance=4)
    assert positions.tolist() == [
        [[2, 3, 4, 5, 6], [4, 5, 6, 7, 7]],  # head 2: j − 2 + 4; tail 0: j + 4, distances capped at ±3
        [[1, 2, 3, 4, 5], [1, 2, 3, 4, 5]],  # head 15 → clamped to 3: j − 3 + 4
    ]


def test_prototypes_are_the_mean_of_the_real_shots_and_logits_the_negative_distance():
    support = torch.tensor([[[[1.0, 0.0], [3.0, 2.0]], [[5.0, 5.0], [9.0, 9.0]]]])  # (B=1, N=2, K=2, D=2)
    shots = torch.tensor([[[1, 1], [1, 0]]])  # class 1's second shot is padding
    prototypes = mean_prototypes(support, shots)
    assert prototypes.tolist() == [[[2.0, 1.0], [5.0, 5.0]]]
    assert mean_prototypes(support, torch.zeros_like(shots)).abs().sum() == 0  # a class without a shot: zero
    queries = torch.tensor([[[2.0, 1.0], [5.0, 4.0]]])  # (B, Q=2, D)
    logits = squared_distance_logits(prototypes, queries)
    assert logits.tolist() == [[[0.0, -25.0], [-18.0, -1.0]]]  # −Σ (c − q)²
    weights = torch.tensor([[[1.0, 0.0], [0.0, 2.0]]])  # per class and feature (z)
    assert squared_distance_logits(prototypes, queries, weights).tolist() == [[[0.0, -32.0], [-9.0, -2.0]]]


def test_entity_positions_outside_their_text_are_refused_naming_the_argument():
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])
    check_entity_positions(torch.tensor([[0, 2], [1, 0]]), mask)
    with pytest.raises(
        ValueError, match=r"`support_entity_positions` holds token index 2 at \(1,\) \(head\), outside its text of 2"
    ):
        check_entity_positions(torch.tensor([[0, 2], [2, 0]]), mask, "support_entity_positions")
    with pytest.raises(ValueError, match="holds a negative token index"):
        check_entity_positions(torch.tensor([[0, -1], [0, 0]]), mask)
