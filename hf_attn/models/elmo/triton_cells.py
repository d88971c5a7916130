"""ELMo's fused LSTM cell, forward and backward, as Triton kernels: the twins of `fused_lstm.cell_forward` and
`fused_lstm.cell_backward` (the equations are in `fused_lstm.py`'s docstring). Imported by `fused_lstm.py` on first
use, on CUDA (or on CPU tensors in Triton's interpreter, `TRITON_INTERPRET=1`, for the tests)."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from hf_attn.layers.triton_math import clamp, sigmoid, tanh

# ---------------------------------------------------------------------------------------------------------------
# The cell, forward and backward: Triton kernels (one program per row and block of H cells)
# ---------------------------------------------------------------------------------------------------------------


@triton.jit
def _cell_forward_kernel(
    gates, previous, previous_stride, cells, cells_stride, hidden, hidden_stride, activated, activated_stride,
    size, previous_clip, cell_clip, BLOCK: tl.constexpr,
):  # fmt: skip
    row, block = tl.program_id(0), tl.program_id(1)
    columns = block * BLOCK + tl.arange(0, BLOCK)
    keep = columns < size
    gate_row = gates + row * 4 * size + columns
    input_gate = sigmoid(tl.load(gate_row, mask=keep, other=0.0).to(tl.float32))
    forget_gate = sigmoid(tl.load(gate_row + size, mask=keep, other=0.0).to(tl.float32))
    candidate = tanh(tl.load(gate_row + 2 * size, mask=keep, other=0.0).to(tl.float32))
    output_gate = sigmoid(tl.load(gate_row + 3 * size, mask=keep, other=0.0).to(tl.float32))
    before = clamp(tl.load(previous + row * previous_stride + columns, mask=keep, other=0.0).to(tl.float32),
                    previous_clip)  # fmt: skip
    cell_raw = forget_gate * before + input_gate * candidate
    out = output_gate * tanh(clamp(cell_raw, cell_clip))
    tl.store(cells + row * cells_stride + columns, cell_raw, mask=keep)
    tl.store(hidden + row * hidden_stride + columns, out, mask=keep)
    activated_row = activated + row * activated_stride + columns
    tl.store(activated_row, input_gate, mask=keep)
    tl.store(activated_row + size, forget_gate, mask=keep)
    tl.store(activated_row + 2 * size, candidate, mask=keep)
    tl.store(activated_row + 3 * size, output_gate, mask=keep)


@triton.jit
def _cell_backward_kernel(
    grad_hidden, grad_cell, activated, activated_stride, cells, cells_stride, previous, previous_stride,
    grad_gates, grad_gates_stride, size, previous_clip, cell_clip, BLOCK: tl.constexpr,
):  # fmt: skip
    # `grad_cell` (N, H), contiguous, is read as ∂c_t and overwritten with ∂c_{t−1} (each element by its own
    # program: no race).
    row, block = tl.program_id(0), tl.program_id(1)
    columns = block * BLOCK + tl.arange(0, BLOCK)
    keep = columns < size
    activated_row = activated + row * activated_stride + columns
    input_gate = tl.load(activated_row, mask=keep, other=0.0).to(tl.float32)
    forget_gate = tl.load(activated_row + size, mask=keep, other=0.0).to(tl.float32)
    candidate = tl.load(activated_row + 2 * size, mask=keep, other=0.0).to(tl.float32)
    output_gate = tl.load(activated_row + 3 * size, mask=keep, other=0.0).to(tl.float32)
    cell_raw = tl.load(cells + row * cells_stride + columns, mask=keep, other=0.0).to(tl.float32)
    before = clamp(tl.load(previous + row * previous_stride + columns, mask=keep, other=0.0).to(tl.float32),
                    previous_clip)  # fmt: skip
    grad_out = tl.load(grad_hidden + row * size + columns, mask=keep, other=0.0).to(tl.float32)
    carried = grad_cell + row * size + columns
    tanh_cell = tanh(clamp(cell_raw, cell_clip))
    grad = tl.load(carried, mask=keep, other=0.0).to(tl.float32) + grad_out * output_gate * (
        1.0 - tanh_cell * tanh_cell
    )
    grad = tl.where(tl.abs(cell_raw) <= cell_clip, grad, 0.0)
    grad_row = grad_gates + row * grad_gates_stride + columns
    tl.store(grad_row, grad * candidate * input_gate * (1.0 - input_gate), mask=keep)
    tl.store(grad_row + size, grad * before * forget_gate * (1.0 - forget_gate), mask=keep)
    tl.store(grad_row + 2 * size, grad * input_gate * (1.0 - candidate * candidate), mask=keep)
    tl.store(grad_row + 3 * size, grad_out * tanh_cell * output_gate * (1.0 - output_gate), mask=keep)
    tl.store(carried, grad * forget_gate, mask=keep)


def _row_stride(tensor: torch.Tensor) -> int:
    """The stride between rows of an `(N, ·)` view of `tensor (K, B, ·)` (a step of a `(K, B, T, ·)` buffer):
    rows are evenly spaced when the leading axis spans B rows' strides."""
    if tensor.dim() == 2:
        return tensor.stride(0)
    if tensor.stride(0) != tensor.size(1) * tensor.stride(1) or tensor.stride(-1) != 1:
        raise ValueError("fused cell: a (K, B, ·) step view must have evenly spaced rows")
    return tensor.stride(1)


def _block(size: int) -> int:
    return min(1024, triton.next_power_of_2(size))


def triton_cell_forward(
    gates: torch.Tensor,
    previous: torch.Tensor,
    previous_clip: float,
    cell_clip: float,
    cells: torch.Tensor,
    hidden: torch.Tensor,
    activated: torch.Tensor,
) -> None:
    """`cell_forward` by the Triton kernel, into `cells`, `hidden` `(K, B, H)` and `activated` `(K, B, 4H)` (step
    views of the loop's buffers); `gates` contiguous `(K, B, 4H)`, `previous` `(K, B, H)`."""
    rows, size = gates.numel() // gates.size(-1), cells.size(-1)
    grid = (rows, triton.cdiv(size, _block(size)))
    _cell_forward_kernel[grid](
        gates, previous, _row_stride(previous), cells, _row_stride(cells), hidden, _row_stride(hidden),
        activated, _row_stride(activated), size, previous_clip, cell_clip, BLOCK=_block(size),
    )  # fmt: skip


def triton_cell_backward(
    grad_hidden: torch.Tensor,
    grad_cell: torch.Tensor,
    activated: torch.Tensor,
    cells: torch.Tensor,
    previous: torch.Tensor,
    previous_clip: float,
    cell_clip: float,
    grad_gates: torch.Tensor,
) -> None:
    """`cell_backward` by the Triton kernel: writes ∂gates into `grad_gates` (a step view) and replaces the
    contiguous `grad_cell` by ∂c_{t−1}; `grad_hidden` contiguous."""
    rows, size = grad_hidden.numel() // grad_hidden.size(-1), grad_hidden.size(-1)
    grid = (rows, triton.cdiv(size, _block(size)))
    _cell_backward_kernel[grid](
        grad_hidden, grad_cell, activated, _row_stride(activated), cells, _row_stride(cells), previous,
        _row_stride(previous), grad_gates, _row_stride(grad_gates), size, previous_clip, cell_clip,
        BLOCK=_block(size),
    )  # fmt: skip
