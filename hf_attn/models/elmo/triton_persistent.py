"""ELMo's clipped LSTM with projection as one Triton launch per layer, forward and backward (both directions).

`fused_lstm.py`'s per-step path launches a GEMM, the fused cell and a GEMM per step (and the clip). Here one program
owns one (direction, batch row) and loops over the T steps inside the kernel, the recurrent matrix–vector products
included; the row's state passes from step to step through global memory only this program touches, and
`tl.debug_barrier()` between a step's phases makes one phase's stores visible to the next's loads. No program waits
for another. Each program reads W_hh and W_proj at every step through its one SM, so the step time grows with the
weights: on an H200 it beats the per-step loop up to about 150k weights a direction (H = 256, P = 64: 79 against
111 µs a training step) and loses beyond (H = 1024: 509 against 144), `benchmarks/results/recurrence_paths.md`.
`fused_lstm.persistent_applies` chooses it by that size (`PERSISTENT_MAX_WEIGHTS`), and keeps the per-step path (its
GEMMs spread over the whole GPU) for the original ELMo's 4096 × 512 cells.

The equations are `fused_lstm.py`'s (module docstring), per step t, mirrored phase by phase below:

    forward:   gates = W_ih x_t + b + W_hh m_{t−1};  c_t^raw = f ⊙ c_{t−1} + i ⊙ ĉ;  h_t = o ⊙ tanh(clip(c_t^raw, κ_c))
               m_t^raw = W_proj h_t;  m_t = clip(m_t^raw, κ_p)          (c_{t−1} clipped, except the initial cell)
    backward:  ∂m^raw = (∂m_t + ∂m_carry) ⊙ [|m_t^raw| ≤ κ_p];  ∂h = W_projᵀ ∂m^raw
               ∂c = ∂c_carry + ∂h ⊙ o ⊙ (1 − tanh² c_t), ∂c ← ∂c ⊙ [|c_t^raw| ≤ κ_c];  ∂gates as in `cell_backward`
               ∂c_carry ← ∂c ⊙ f;  ∂m_carry ← W_hhᵀ ∂gates

Deviations: none in the maths; every sum accumulates in float32 whatever the inputs' dtype.

Shape legend: K = 2 directions, B batch, T steps, H cells, P projection (P = H without one), N = K·B programs.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from hf_attn.layers.triton_math import clamp, sigmoid, tanh

_FEATURES = 64  # features per tile, along either axis of a weight


@triton.jit
def _forward_kernel(
    projected, weight_hh, weight_proj, cell, output,
    outputs, raw_outputs, cells, hiddens, activated,
    batch, steps, size, projection, cell_clip, proj_clip,
    PROJECT: tl.constexpr, SAVE: tl.constexpr, FEATURES: tl.constexpr,
):  # fmt: skip
    # One program, one (direction, row): program = k·B + b. Every tensor is contiguous; `hiddens` is (N, T, H) with
    # SAVE, else (N, 1, H) scratch; `raw_outputs` and `activated` are written only with SAVE.
    program = tl.program_id(0)
    direction = program // batch
    hh = weight_hh + direction * 4 * size * projection
    proj = weight_proj + direction * projection * size
    lanes = tl.arange(0, FEATURES)
    for t in range(0, steps):
        step = program * steps + t
        if SAVE:  # noqa: SIM108 (h_t kept for the backward, W_proj's gradient; a statement Triton compiles as is)
            hidden_row = hiddens + step * size
        else:  # one row of scratch
            hidden_row = hiddens + program * size
        # gates = W_ih x_t + b + W_hh m_{t−1}, then the cell, per block of H cells
        for j_start in range(0, size, FEATURES):
            j = j_start + lanes
            in_j = j < size
            gate_row = projected + step * 4 * size + j
            input_gate = tl.load(gate_row, mask=in_j, other=0.0).to(tl.float32)
            forget_gate = tl.load(gate_row + size, mask=in_j, other=0.0).to(tl.float32)
            candidate = tl.load(gate_row + 2 * size, mask=in_j, other=0.0).to(tl.float32)
            output_gate = tl.load(gate_row + 3 * size, mask=in_j, other=0.0).to(tl.float32)
            for p_start in range(0, projection, FEATURES):
                p = p_start + lanes
                in_p = p < projection
                if t == 0:
                    previous = tl.load(output + program * projection + p, mask=in_p, other=0.0).to(tl.float32)
                else:
                    previous = tl.load(outputs + (step - 1) * projection + p, mask=in_p, other=0.0).to(tl.float32)
                tile = in_j[:, None] & in_p[None, :]
                weight = hh + j[:, None] * projection + p[None, :]
                previous = previous[None, :]
                input_gate += tl.sum(tl.load(weight, mask=tile, other=0.0).to(tl.float32) * previous, axis=1)
                forget_gate += tl.sum(
                    tl.load(weight + size * projection, mask=tile, other=0.0).to(tl.float32) * previous, axis=1
                )
                candidate += tl.sum(
                    tl.load(weight + 2 * size * projection, mask=tile, other=0.0).to(tl.float32) * previous, axis=1
                )
                output_gate += tl.sum(
                    tl.load(weight + 3 * size * projection, mask=tile, other=0.0).to(tl.float32) * previous, axis=1
                )
            input_gate, forget_gate = sigmoid(input_gate), sigmoid(forget_gate)
            candidate, output_gate = tanh(candidate), sigmoid(output_gate)
            if t == 0:  # the initial cell is read unclipped
                before = tl.load(cell + program * size + j, mask=in_j, other=0.0).to(tl.float32)
            else:
                before = clamp(tl.load(cells + (step - 1) * size + j, mask=in_j, other=0.0).to(tl.float32), cell_clip)
            cell_raw = forget_gate * before + input_gate * candidate
            hidden = output_gate * tanh(clamp(cell_raw, cell_clip))
            tl.store(cells + step * size + j, cell_raw, mask=in_j)
            if PROJECT:
                tl.store(hidden_row + j, hidden, mask=in_j)
            else:  # m_t = h_t
                tl.store(outputs + step * projection + j, hidden, mask=in_j)
            if SAVE:
                gates_row = activated + step * 4 * size + j
                tl.store(gates_row, input_gate, mask=in_j)
                tl.store(gates_row + size, forget_gate, mask=in_j)
                tl.store(gates_row + 2 * size, candidate, mask=in_j)
                tl.store(gates_row + 3 * size, output_gate, mask=in_j)
        tl.debug_barrier()
        if PROJECT:  # m_t^raw = W_proj h_t, m_t = clip(m_t^raw, κ_p)
            for p_start in range(0, projection, FEATURES):
                p = p_start + lanes
                in_p = p < projection
                total = tl.zeros([FEATURES], dtype=tl.float32)
                for j_start in range(0, size, FEATURES):
                    j = j_start + lanes
                    in_j = j < size
                    hidden = tl.load(hidden_row + j, mask=in_j, other=0.0).to(tl.float32)
                    weight = tl.load(proj + p[:, None] * size + j[None, :],
                                     mask=in_p[:, None] & in_j[None, :], other=0.0).to(tl.float32)  # fmt: skip
                    total += tl.sum(weight * hidden[None, :], axis=1)
                tl.store(outputs + step * projection + p, clamp(total, proj_clip), mask=in_p)
                if SAVE:
                    tl.store(raw_outputs + step * projection + p, total, mask=in_p)
            tl.debug_barrier()


@triton.jit
def _backward_kernel(
    grad_outputs, weight_hh, weight_proj, cell,
    raw_outputs, cells, activated,
    grad_gates, grad_raw, grad_cell, grad_output,
    batch, steps, size, projection, cell_clip, proj_clip,
    PROJECT: tl.constexpr, FEATURES: tl.constexpr,
):  # fmt: skip
    # One program, one (direction, row), the T steps in reverse. Float32, contiguous: grad_gates (N, T, 4H) and
    # grad_raw (N, T, P) written, the carries grad_cell (N, H) and grad_output (N, P) zero at the start and ∂c_0,
    # ∂m_0 at the end.
    program = tl.program_id(0)
    direction = program // batch
    hh = weight_hh + direction * 4 * size * projection
    proj = weight_proj + direction * projection * size
    lanes = tl.arange(0, FEATURES)
    for back in range(0, steps):
        t = steps - 1 - back
        step = program * steps + t
        # ∂m^raw = (∂m_t + ∂m_carry) ⊙ [|m_t^raw| ≤ κ_p]  (= ∂m without a projection)
        for p_start in range(0, projection, FEATURES):
            p = p_start + lanes
            in_p = p < projection
            grad = tl.load(grad_outputs + step * projection + p, mask=in_p, other=0.0).to(tl.float32)
            grad += tl.load(grad_output + program * projection + p, mask=in_p, other=0.0)
            if PROJECT:
                raw = tl.load(raw_outputs + step * projection + p, mask=in_p, other=0.0).to(tl.float32)
                grad = tl.where(tl.abs(raw) <= proj_clip, grad, 0.0)
            tl.store(grad_raw + step * projection + p, grad, mask=in_p)
        tl.debug_barrier()
        # ∂h = W_projᵀ ∂m^raw, then back through the cell, per block of H cells
        for j_start in range(0, size, FEATURES):
            j = j_start + lanes
            in_j = j < size
            if PROJECT:
                grad_out = tl.zeros([FEATURES], dtype=tl.float32)
                for p_start in range(0, projection, FEATURES):
                    p = p_start + lanes
                    in_p = p < projection
                    grad = tl.load(grad_raw + step * projection + p, mask=in_p, other=0.0)
                    weight = tl.load(proj + p[:, None] * size + j[None, :],
                                     mask=in_p[:, None] & in_j[None, :], other=0.0).to(tl.float32)  # fmt: skip
                    grad_out += tl.sum(weight * grad[:, None], axis=0)
            else:
                grad_out = tl.load(grad_raw + step * projection + j, mask=in_j, other=0.0)
            gates_row = activated + step * 4 * size + j
            input_gate = tl.load(gates_row, mask=in_j, other=0.0).to(tl.float32)
            forget_gate = tl.load(gates_row + size, mask=in_j, other=0.0).to(tl.float32)
            candidate = tl.load(gates_row + 2 * size, mask=in_j, other=0.0).to(tl.float32)
            output_gate = tl.load(gates_row + 3 * size, mask=in_j, other=0.0).to(tl.float32)
            cell_raw = tl.load(cells + step * size + j, mask=in_j, other=0.0).to(tl.float32)
            if t == 0:
                before = tl.load(cell + program * size + j, mask=in_j, other=0.0).to(tl.float32)
            else:
                before = clamp(tl.load(cells + (step - 1) * size + j, mask=in_j, other=0.0).to(tl.float32), cell_clip)
            carried = grad_cell + program * size + j
            tanh_cell = tanh(clamp(cell_raw, cell_clip))
            grad = tl.load(carried, mask=in_j, other=0.0) + grad_out * output_gate * (1.0 - tanh_cell * tanh_cell)
            grad = tl.where(tl.abs(cell_raw) <= cell_clip, grad, 0.0)
            grad_row = grad_gates + step * 4 * size + j
            tl.store(grad_row, grad * candidate * input_gate * (1.0 - input_gate), mask=in_j)
            tl.store(grad_row + size, grad * before * forget_gate * (1.0 - forget_gate), mask=in_j)
            tl.store(grad_row + 2 * size, grad * input_gate * (1.0 - candidate * candidate), mask=in_j)
            tl.store(grad_row + 3 * size, grad_out * tanh_cell * output_gate * (1.0 - output_gate), mask=in_j)
            tl.store(carried, grad * forget_gate, mask=in_j)
        tl.debug_barrier()
        # ∂m_carry = W_hhᵀ ∂gates: m_{t−1} fed this step's gates
        for p_start in range(0, projection, FEATURES):
            p = p_start + lanes
            in_p = p < projection
            total = tl.zeros([FEATURES], dtype=tl.float32)
            for g_start in range(0, 4 * size, FEATURES):
                g = g_start + lanes
                in_g = g < 4 * size
                grad = tl.load(grad_gates + step * 4 * size + g, mask=in_g, other=0.0)
                weight = tl.load(hh + g[:, None] * projection + p[None, :],
                                 mask=in_g[:, None] & in_p[None, :], other=0.0).to(tl.float32)  # fmt: skip
                total += tl.sum(weight * grad[:, None], axis=0)
            tl.store(grad_output + program * projection + p, total, mask=in_p)
        tl.debug_barrier()


def _warps(size: int) -> int:
    return 8 if size >= 256 else 4


def elmo_persistent_forward(
    projected: torch.Tensor,
    weight_hh: torch.Tensor,
    weight_proj: torch.Tensor | None,
    cell: torch.Tensor,
    output: torch.Tensor,
    cell_clip: float,
    proj_clip: float,
    save: bool,
) -> list[torch.Tensor]:
    """`fused_lstm.recurrence_forward` in one launch: `projected (K, B, T, 4H)`, `weight_hh (K, 4H, P)`,
    `weight_proj (K, P, H)` or None, the initial `cell (K, B, H)` and `output (K, B, P)`. Returns the same list,
    `[m, m^raw or empty, c^raw, h or empty, activated gates]`, the last three empty without `save` (inference)."""
    directions, batch, steps, gate_size = projected.shape
    size, projection = gate_size // 4, output.size(-1)
    project = weight_proj is not None
    like = projected
    outputs = like.new_empty(directions, batch, steps, projection)
    cells = like.new_empty(directions, batch, steps, size)
    empty = like.new_empty(0)
    raw_outputs = like.new_empty(outputs.shape) if save and project else empty
    hiddens = like.new_empty(cells.shape) if save and project else like.new_empty(directions, batch, 1, size)
    activated = like.new_empty(projected.shape) if save else empty
    if directions * batch and steps:
        _forward_kernel[(directions * batch,)](
            projected.contiguous(), weight_hh.contiguous(), weight_proj.contiguous() if project else weight_hh,
            cell.contiguous(), output.contiguous(), outputs, raw_outputs if save and project else outputs,
            cells, hiddens, activated if save else projected, batch, steps, size, projection, cell_clip, proj_clip,
            PROJECT=project, SAVE=save, FEATURES=_FEATURES, num_warps=_warps(size),
        )  # fmt: skip
    return [outputs, raw_outputs, cells, hiddens if save and project else empty, activated]


def elmo_persistent_backward(
    grad_outputs: torch.Tensor,
    weight_hh: torch.Tensor,
    weight_proj: torch.Tensor | None,
    cell: torch.Tensor,
    output: torch.Tensor,
    saved: list[torch.Tensor],
    cell_clip: float,
    proj_clip: float,
) -> list[torch.Tensor]:
    """`fused_lstm.recurrence_backward`'s loop in one launch: the same arguments (`saved` is
    `elmo_persistent_forward`'s list with `save`). Returns `[∂gates (the ∂projected), ∂m^raw, ∂cell, ∂output]`; the
    weight gradients are the caller's (`fused_lstm.weight_gradients`), one GEMM each."""
    outputs, raw_outputs, cells, _, activated = saved
    directions, batch, steps, gate_size = activated.shape
    size, projection = gate_size // 4, output.size(-1)
    project = weight_proj is not None
    float32 = torch.float32
    grad_gates = activated.new_empty(activated.shape, dtype=float32)
    grad_raw = outputs.new_empty(outputs.shape, dtype=float32)
    grad_cell = cell.new_zeros(cell.shape, dtype=float32)
    grad_output = output.new_zeros(output.shape, dtype=float32)
    if directions * batch and steps:
        _backward_kernel[(directions * batch,)](
            grad_outputs.contiguous(), weight_hh.contiguous(), weight_proj.contiguous() if project else weight_hh,
            cell.contiguous(), raw_outputs if project else outputs, cells, activated, grad_gates, grad_raw,
            grad_cell, grad_output, batch, steps, size, projection, cell_clip, proj_clip,
            PROJECT=project, FEATURES=_FEATURES, num_warps=_warps(size),
        )  # fmt: skip
    dtype = activated.dtype
    return [grad_gates.to(dtype), grad_raw.to(dtype), grad_cell.to(dtype), grad_output.to(dtype)]
