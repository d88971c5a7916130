"""Where the fused kernels run (`hf_attn.layers.kernels`): on CUDA tensors where triton is installed, on the CPU only
when asked (the tests, in Triton's interpreter); and the launches a block of code would make on a GPU, counted
without one (views, bare allocations and copies that copy nothing launch nothing)."""

from __future__ import annotations

import torch

from hf_attn.layers import kernels
from hf_attn.layers.kernels import LaunchCounter, kernels_apply, triton_installed


def test_kernels_apply_on_cuda_or_on_the_cpu_when_asked(monkeypatch):
    cpu = torch.zeros(2)
    assert kernels_apply(cpu, on_cpu=True) == triton_installed() and not kernels_apply(cpu)
    monkeypatch.setattr(kernels, "triton_installed", lambda: False)
    assert not kernels_apply(cpu, on_cpu=True)  # no triton: never


def test_the_counter_counts_operators_that_compute_and_not_views_or_empty_copies():
    x = torch.randn(4, 5)
    with LaunchCounter() as launches:
        y = x.view(20).reshape(4, 5).contiguous()  # views, and a contiguous tensor's no-op
        z = torch.empty(3)  # an allocation
        w = (y * 2).sum()  # two kernels
    assert launches.names == ["mul", "sum"] and launches.total == 2 and launches.triton == 0
    assert z.shape == (3,) and w.shape == ()
    with LaunchCounter() as copies:
        x.t().contiguous()  # a transposed tensor made contiguous: one copy
    assert copies.aten == 1
