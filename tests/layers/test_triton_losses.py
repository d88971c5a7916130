"""The fused output loss's Triton kernel (`hf_attn.layers.triton_losses`) against PyTorch's cross-entropy and the
two-step loss; in Triton's interpreter without a GPU, on CUDA under `make test-gpu`."""

from __future__ import annotations

import pytest
import torch

from tests.test_kernels import DEVICE, close, pytestmark, record_calls  # noqa: F401 (the kernels' marks)


@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_cross_entropy_kernel_matches_pytorch(dtype, label_smoothing):
    """Each row's loss and ∂ℓ/∂z (written over the logits) against `cross_entropy` and its autograd, at V = 5000
    (two class tiles, the second part-filled), with −100 rows: fp32 within 1e-5, bf16 logits against float32 PyTorch
    to bf16's precision. A NaN logit makes its row's loss NaN."""
    from hf_attn.layers.triton_losses import cross_entropy_rows

    generator = torch.Generator().manual_seed(0)
    rows, vocabulary = 6, 5000
    logits = (torch.randn(rows, vocabulary, generator=generator) * 3).to(DEVICE, dtype)
    labels = torch.randint(0, vocabulary, (rows,), generator=generator).to(DEVICE)
    labels[[1, 4]] = -100
    reference = logits.float().requires_grad_()
    expected = torch.nn.functional.cross_entropy(
        reference, labels, ignore_index=-100, reduction="none", label_smoothing=label_smoothing
    )
    expected.sum().backward()
    losses = torch.empty(rows, device=DEVICE)
    gradient = logits.clone()
    cross_entropy_rows(gradient, labels, losses, label_smoothing, gradient=True)
    close([losses, gradient], [expected.detach(), reference.grad], dtype)
    assert not losses[[1, 4]].any() and not gradient[[1, 4]].any()  # −100 rows: nothing
    poisoned = logits.clone()
    poisoned[0, 7] = float("nan")
    cross_entropy_rows(poisoned, labels, losses, label_smoothing, gradient=False)
    assert torch.isnan(losses[0]) and torch.isfinite(losses[2:]).all()


@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
def test_fused_output_loss_on_the_kernel_equals_the_two_step_loss(monkeypatch, label_smoothing):
    """`fused_linear_cross_entropy` on the loss kernel (chunks of 4 rows) against `token_cross_entropy(linear(h))`:
    the loss and the gradients of h, W and b within 1e-5 in float32, with ignored positions and smoothing; nothing
    to score gives 0 and zero gradients."""
    from hf_attn.layers import losses, triton_losses

    monkeypatch.setattr(losses, "LOSS_KERNEL_ON_CPU", True)
    launched = record_calls(monkeypatch, triton_losses, {"cross_entropy_rows": "kernel"})
    torch.manual_seed(0)
    vocabulary = 400
    hidden = torch.randn(3, 9, 16, device=DEVICE, requires_grad=True)
    weight = torch.randn(vocabulary, 16, device=DEVICE, requires_grad=True)
    bias = torch.randn(vocabulary, device=DEVICE, requires_grad=True)
    labels = torch.randint(0, vocabulary, (3, 9), device=DEVICE)
    labels[0, 4:] = -100
    leaves = [hidden, weight, bias]
    expected = losses.token_cross_entropy(
        torch.nn.functional.linear(hidden, weight, bias), labels, label_smoothing=label_smoothing
    )
    fused = losses.fused_linear_cross_entropy(
        hidden, weight, bias, labels, label_smoothing=label_smoothing, chunk_elements=4 * vocabulary
    )
    assert len(launched) == 7  # 27 rows, 4 a chunk: one kernel a chunk
    torch.testing.assert_close(fused, expected, rtol=1e-5, atol=1e-5)
    for ours, theirs in zip(torch.autograd.grad(fused, leaves), torch.autograd.grad(expected, leaves), strict=True):
        torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-5)
    nothing = losses.fused_linear_cross_entropy(hidden, weight, bias, torch.full_like(labels, -100))
    grads = torch.autograd.grad(nothing, leaves)
    assert nothing.item() == 0.0 and not any(grad.any() for grad in grads)
