"""Where the fused kernels run: whether triton is installed (found without importing it, so that `import hf_attn`
does not import triton) and whether a tensor is one the kernels take."""

from __future__ import annotations

import functools
import importlib.util

import torch


@functools.cache
def triton_installed() -> bool:
    """Whether `import triton` would find a package (a broken or blocked installation counts as none)."""
    try:
        return importlib.util.find_spec("triton") is not None
    except (ImportError, ValueError):
        return False


def kernels_apply(tensor: torch.Tensor, on_cpu: bool = False) -> bool:
    """Whether Triton kernels run for `tensor`: triton is installed and the tensor is on CUDA, or on the CPU when
    `on_cpu` (the tests, in Triton's interpreter: `TRITON_INTERPRET=1`)."""
    return triton_installed() and (tensor.is_cuda or (on_cpu and tensor.device.type == "cpu"))
