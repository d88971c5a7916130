"""Elementwise functions for Triton kernels that `triton.language` lacks or computes in ways we avoid, shared by the
model folders' fused recurrences (their `triton_*.py`). Importing this module imports triton: only those kernel
modules import it, and only on first use (`kernels_apply`)."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def sigmoid(x):
    return 1.0 / (1.0 + tl.exp(-x))


@triton.jit
def tanh(x):
    # sign(x)·(1 − e^{−2|x|}) / (1 + e^{−2|x|}): never overflows, for any x
    e = tl.exp(-2.0 * tl.abs(x))
    magnitude = (1.0 - e) / (1.0 + e)
    return tl.where(x < 0, -magnitude, magnitude)


@triton.jit
def clamp(x, bound):
    return tl.minimum(tl.maximum(x, -bound), bound)
