"""The token losses (hf_attn.layers.losses): one rule for a batch with nothing to score, a large loss in chunks, and
the fused projection-and-loss equal to the projection then the loss."""

from __future__ import annotations

import pytest
import torch
from torch import nn


def test_token_cross_entropy_has_one_rule_for_a_batch_with_nothing_to_score():
    from hf_attn.layers import token_cross_entropy

    logits = torch.randn(2, 3, 5, requires_grad=True)
    nothing = torch.full((2, 3), -100)
    loss = token_cross_entropy(logits, nothing)
    loss.backward()
    assert loss.item() == 0.0 and torch.equal(logits.grad, torch.zeros_like(logits))
    labels = torch.tensor([[1, -100, 2], [0, 4, -100]])
    expected = torch.nn.functional.cross_entropy(logits.reshape(-1, 5), labels.reshape(-1), ignore_index=-100)
    torch.testing.assert_close(token_cross_entropy(logits, labels), expected)
    torch.testing.assert_close(token_cross_entropy(logits, labels, num_items_in_batch=8), expected * 4 / 8)
    diverged = logits.detach().clone()
    diverged[0, 0, 0] = float("nan")
    assert torch.isnan(token_cross_entropy(diverged, labels))  # a real NaN is never hidden


def test_a_large_loss_runs_in_chunks_with_the_same_value_and_gradient_in_less_memory():
    """Over `chunk_elements` logits, `token_cross_entropy` runs chunk by chunk under checkpointing: the same loss and
    gradient, and the backward pass keeps no float32 copy of the logits (a 25k-token batch over 32k words: 3.3 GB)."""
    from hf_attn.layers import token_cross_entropy

    torch.manual_seed(0)
    logits = torch.randn(6, 50, 300).to(torch.bfloat16).requires_grad_()
    labels = torch.randint(0, 300, (6, 50))
    labels[0, :7] = -100
    results = []
    for chunk_elements in (10**9, 3000):  # whole, then 10-row chunks
        saved = []

        def pack(tensor: torch.Tensor, saved: list = saved) -> torch.Tensor:
            if tensor.untyped_storage().data_ptr() != logits.untyped_storage().data_ptr():  # not a view of the logits
                saved.append(tensor.numel() * tensor.element_size())
            return tensor

        logits.grad = None
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
            loss = token_cross_entropy(logits, labels, label_smoothing=0.1, chunk_elements=chunk_elements)
        loss.backward()
        results.append((loss.detach(), logits.grad.clone(), sum(saved)))
    (whole, whole_grad, whole_saved), (chunked, chunked_grad, chunked_saved) = results
    torch.testing.assert_close(chunked, whole, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(chunked_grad.float(), whole_grad.float(), rtol=0, atol=1e-5)
    float32_logits = logits.numel() * 4
    assert whole_saved >= float32_logits  # the float32 log-softmax of every position
    assert chunked_saved < float32_logits / 4, (chunked_saved, float32_logits)
    logits.grad = None
    compiled = torch.compile(token_cross_entropy, backend="aot_eager", fullgraph=True)  # one graph, chunks included
    try:
        loss = compiled(logits, labels, label_smoothing=0.1, chunk_elements=3000)
        loss.backward()
    finally:
        torch._dynamo.reset()
    torch.testing.assert_close(loss.detach(), whole, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(logits.grad.float(), whole_grad.float(), rtol=0, atol=1e-5)


def _two_step_loss(hidden, weight, bias, labels, **kwargs):
    from hf_attn.layers.losses import token_cross_entropy

    return token_cross_entropy(nn.functional.linear(hidden, weight, bias), labels, **kwargs)


@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
@pytest.mark.parametrize("with_bias", [False, True], ids=["no-bias", "bias"])
def test_fused_linear_cross_entropy_equals_the_projection_then_the_loss(label_smoothing, with_bias):
    """The fused output loss (chunks of 4 rows here) against `token_cross_entropy(linear(h))`: the loss and the
    gradients of h, W and b within 1e-5 in float32, with ignored positions, ε smoothing and `num_items_in_batch`;
    what autograd keeps for the backward pass is the three gradients, never a (tokens, V) tensor."""
    from hf_attn.layers.losses import fused_linear_cross_entropy

    torch.manual_seed(0)
    vocabulary = 400
    hidden = torch.randn(3, 9, 16, requires_grad=True)
    weight = torch.randn(vocabulary, 16, requires_grad=True)
    bias = torch.randn(vocabulary, requires_grad=True) if with_bias else None
    labels = torch.randint(0, vocabulary, (3, 9))
    labels[0, 4:] = -100
    leaves = [hidden, weight] + ([bias] if with_bias else [])
    for count in (None, 40):
        kwargs = {"num_items_in_batch": count, "label_smoothing": label_smoothing}
        expected = _two_step_loss(hidden, weight, bias, labels, **kwargs)
        expected_grads = torch.autograd.grad(expected, leaves)
        saved = []

        def pack(tensor: torch.Tensor, saved: list = saved) -> torch.Tensor:
            saved.append(tensor.numel())
            return tensor

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
            fused = fused_linear_cross_entropy(hidden, weight, bias, labels, chunk_elements=4 * vocabulary, **kwargs)
        assert max(saved) < labels.numel() * vocabulary  # no logits-sized tensor kept
        torch.testing.assert_close(fused, expected, rtol=1e-5, atol=1e-5)
        for ours, theirs in zip(torch.autograd.grad(fused, leaves), expected_grads, strict=True):
            torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-5)


def test_fused_linear_cross_entropy_edge_cases_and_bf16():
    """Nothing to score: loss 0 and zero gradients, never NaN; a NaN hidden state still gives NaN; under bf16
    autocast the loss and gradients agree with the two-step loss to bf16's precision."""
    from hf_attn.layers.losses import fused_linear_cross_entropy

    torch.manual_seed(0)
    hidden = torch.randn(2, 5, 8, requires_grad=True)
    weight = torch.randn(30, 8, requires_grad=True)
    nothing = torch.full((2, 5), -100)
    loss = fused_linear_cross_entropy(hidden, weight, None, nothing)
    loss.backward()
    assert loss.item() == 0.0 and not hidden.grad.any() and not weight.grad.any()
    labels = torch.randint(0, 30, (2, 5))
    assert torch.isnan(fused_linear_cross_entropy(hidden * float("nan"), weight, None, labels))
    with pytest.raises(ValueError, match="labels"):
        fused_linear_cross_entropy(hidden, weight, None, torch.randint(0, 30, (2, 4)))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        fused = fused_linear_cross_entropy(hidden, weight, None, labels, chunk_elements=60)
        expected = _two_step_loss(hidden, weight, None, labels)
    ours = torch.autograd.grad(fused, [hidden, weight])
    theirs = torch.autograd.grad(expected, [hidden, weight])
    torch.testing.assert_close(fused, expected.float(), rtol=2e-2, atol=2e-2)
    for mine, reference in zip(ours, theirs, strict=True):
        assert mine.dtype == reference.dtype
        torch.testing.assert_close(mine, reference, rtol=5e-2, atol=5e-2)
