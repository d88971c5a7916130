"""The cross-entropy of a chunk of logits, and its gradient written over them, as one Triton kernel.

`losses.fused_linear_cross_entropy` projects the hidden states to logits a chunk of rows at a time. In PyTorch each
chunk then goes through a float32 log-softmax, a gather, the smoothing mean, an exp, a scatter and a few more passes
over (n, V) values. Here one program a row reads its V logits twice, in float32 registers:

    pass 1:  m = max_c z_c,  S = Σ_c exp(z_c − m),  Σ_c z_c          (online: the maximum rescales the sum as it moves)
             lse = m + log S
             ℓ   = (1 − ε)(lse − z_y) + ε (lse − (1/V) Σ_c z_c)     (= −(1 − ε) log p_y − (ε / V) Σ_c log p_c)
    pass 2:  ∂ℓ/∂z_c = exp(z_c − lse) − ε / V − (1 − ε) [c = y]      (written over z_c, in the logits' dtype)

A row labelled −100 scores nothing: its loss and gradient are 0. A NaN or infinite logit makes the row's loss NaN,
as `nn.functional.cross_entropy` does (divergence stays visible). The same results as the PyTorch path within
float32 rounding (tested in Triton's interpreter, `TRITON_INTERPRET=1`).

Shape legend: n rows of the chunk, V classes.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

_LOWEST = tl.constexpr(-3.4028234663852886e38)  # float32's most negative finite value: exp(lowest − m) is 0
_MAX_BLOCK = 4096  # classes a program holds at once


@triton.jit
def _cross_entropy_kernel(
    logits, logits_row, labels, losses, vocabulary, smoothing, GRAD: tl.constexpr, BLOCK: tl.constexpr
):
    row = tl.program_id(0).to(tl.int64)
    base = logits + row * logits_row
    label = tl.load(labels + row)
    scored = label != -100
    lanes = tl.arange(0, BLOCK)
    # pass 1: a running maximum per lane, the sum of exp(z − maximum) rescaled as the maximum grows, and Σ z
    largest = tl.full([BLOCK], _LOWEST, dtype=tl.float32)
    sums = tl.zeros([BLOCK], dtype=tl.float32)
    totals = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, vocabulary, BLOCK):
        classes = start + lanes
        keep = classes < vocabulary
        z = tl.load(base + classes, mask=keep, other=_LOWEST).to(tl.float32)
        grown = tl.maximum(largest, z)
        sums = sums * tl.exp(largest - grown) + tl.where(keep, tl.exp(z - grown), 0.0)
        largest = grown
        totals += tl.where(keep, z, 0.0)
    top = tl.max(largest, axis=0)
    total = tl.sum(totals, axis=0)
    lse = top + tl.log(tl.sum(sums * tl.exp(largest - top), axis=0))
    target = tl.load(base + tl.maximum(label, 0)).to(tl.float32)
    loss = (1.0 - smoothing) * (lse - target) + smoothing * (lse - total / vocabulary)
    loss += total * 0.0  # NaN when a logit is NaN or infinite (tl.maximum would drop a NaN)
    tl.store(losses + row, tl.where(scored, loss, 0.0))
    if GRAD:
        for start in range(0, vocabulary, BLOCK):
            classes = start + lanes
            keep = classes < vocabulary
            z = tl.load(base + classes, mask=keep, other=0.0).to(tl.float32)
            gradient = tl.exp(z - lse) - smoothing / vocabulary
            gradient = tl.where(classes == label, gradient - (1.0 - smoothing), gradient)
            tl.store(base + classes, tl.where(scored, gradient, 0.0), mask=keep)


# The operator's namespace is this module's name (a copy saved beside a checkpoint registers its own, no clash).
_NAMESPACE = __name__.replace(".", "_")


def cross_entropy_rows(
    logits: torch.Tensor, labels: torch.Tensor, losses: torch.Tensor, label_smoothing: float, gradient: bool
) -> None:
    """Each row's loss of `logits (n, V)` (rows contiguous) against `labels (n,)` (ids or −100) into `losses (n,)`
    (float32), and with `gradient` ∂ℓ/∂logits written over `logits` in place (module docstring)."""
    if logits.stride(-1) != 1:
        raise ValueError("cross_entropy_rows: the logits' rows must be contiguous")
    _cross_entropy_rows(logits, labels, losses, float(label_smoothing), gradient)


# An operator of its own: one node to `torch.compile`, one dispatch to a counter (`benchmarks/dispatch_counts.py`
# counts a training step on fake tensors, where the fake implementation below stands for the kernel's writes).
@torch.library.custom_op(f"{_NAMESPACE}::cross_entropy_rows", mutates_args=("logits", "losses"))
def _cross_entropy_rows(
    logits: torch.Tensor, labels: torch.Tensor, losses: torch.Tensor, label_smoothing: float, gradient: bool
) -> None:
    rows, vocabulary = logits.shape
    if rows == 0:
        return
    block = min(_MAX_BLOCK, triton.next_power_of_2(vocabulary))
    _cross_entropy_kernel[(rows,)](
        logits,
        logits.stride(0),
        labels.contiguous(),
        losses,
        vocabulary,
        float(label_smoothing),
        GRAD=gradient,
        BLOCK=block,
        num_warps=8 if block >= 2048 else 4,
    )


@_cross_entropy_rows.register_fake
def _(logits, labels, losses, label_smoothing, gradient):
    return None
