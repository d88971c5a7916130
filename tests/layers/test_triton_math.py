"""The elementwise functions the fused kernels share (`hf_attn.layers.triton_math`) against PyTorch's, in a kernel
of their own: a sigmoid and a tanh that never overflow, for any x, and a symmetric clamp. In Triton's interpreter
without a GPU, on CUDA under `make test-gpu`."""

from __future__ import annotations

import pytest
import torch

from tests.test_kernels import DEVICE, pytestmark  # noqa: F401 (the kernels' marks: a device or the interpreter)

triton = pytest.importorskip("triton")
tl = pytest.importorskip("triton.language")
triton_math = pytest.importorskip("hf_attn.layers.triton_math")  # imports triton


@triton.jit
def apply(x_pointer, out_pointer, n, which: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    valid = offsets < n
    x = tl.load(x_pointer + offsets, mask=valid)
    if which == 0:
        y = triton_math.sigmoid(x)
    elif which == 1:
        y = triton_math.tanh(x)
    else:
        y = triton_math.clamp(x, 2.5)
    tl.store(out_pointer + offsets, y, mask=valid)


def test_sigmoid_tanh_and_clamp_match_pytorch_at_every_magnitude():
    x = torch.tensor([-1e4, -90.0, -20.0, -3.0, -0.5, 0.0, 1e-4, 0.7, 4.0, 30.0, 95.0, 1e4], device=DEVICE)
    expected = (torch.sigmoid(x), torch.tanh(x), x.clamp(-2.5, 2.5))
    for which, reference in enumerate(expected):
        out = torch.empty_like(x)
        apply[(1,)](x, out, x.numel(), which, BLOCK=16)
        assert torch.isfinite(out).all(), which
        torch.testing.assert_close(out, reference, rtol=1e-6, atol=1e-7)
