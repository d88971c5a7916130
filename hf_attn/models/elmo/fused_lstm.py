"""ELMo's clipped LSTM with projection as one fused recurrence: the engineering beside the paper.

`ElmoLstmLayer._step` (`modeling_elmo.py`) is the readable cell, TF1's `LSTMCell(num_proj=P, cell_clip,
proj_clip)`; run step by step under autograd it launches about a dozen kernels per step forward and twice that
backward. This module computes the same layer, both directions at once, as `elmo_lstm_recurrence`:

- W_ih x_t + b for every step is one batched GEMM before the loop (the caller's `projected`);
- per step, forward: one GEMM for the recurrent term, one fused cell kernel (the gates' nonlinearities, the cell
  update and its clip, h = σ(o) ⊙ tanh(c)), one GEMM for the projection and its clip;
- the backward is written by hand, per step (reversed): one GEMM adds the W_hhᵀ-carry to ∂m_t, the projection
  clip's mask (formed once for all steps), one GEMM back through W_proj, one fused kernel back through the cell
  (below); the weight gradients are one GEMM each at the end, over all steps;
- on CUDA each product is one GEMM a direction (`direction_product`: cuBLAS's batched kernel was several times
  slower for these shapes), each loop is replayed as a CUDA graph (`hf_attn.layers.cuda_graphs.GraphedLoop`), so
  the launches cost once per shape, and the fused kernels are Triton's; elsewhere the same loop runs its PyTorch
  twins (`cell_forward`, `cell_backward`), which the Triton kernels (`triton_cells.py`, imported on first use) are
  tested against (`TRITON_INTERPRET=1` on a CPU);
- a small layer (`persistent_applies`) runs instead as one Triton launch for all its steps, both directions,
  forward and backward (`triton_persistent.py`);
- without a gradient to take (inference) nothing is kept for a backward: neither m^raw, h nor the gates.

The cell and its backward, per step t (i, f, ĉ, o after σ, σ, tanh, σ; clip(x) = min(max(x, −κ), κ)):

    c_t^raw = f ⊙ c_{t−1} + i ⊙ ĉ,   c_t = clip(c_t^raw, κ_c),   h_t = o ⊙ tanh(c_t)
    m_t^raw = W_proj h_t,            m_t = clip(m_t^raw, κ_p)
    ∂m^raw  = (∂m_t + W_hhᵀ-carry) ⊙ [|m_t^raw| ≤ κ_p]           (clamp passes the gradient where it is the identity)
    ∂h      = W_projᵀ ∂m^raw
    ∂c      = ∂c_carry + ∂h ⊙ o ⊙ (1 − tanh²c_t),   ∂c^raw = ∂c ⊙ [|c_t^raw| ≤ κ_c]
    ∂i = ∂c^raw ⊙ ĉ ⊙ i(1 − i),  ∂f = ∂c^raw ⊙ c_{t−1} ⊙ f(1 − f),  ∂ĉ = ∂c^raw ⊙ i ⊙ (1 − ĉ²),
    ∂o = ∂h ⊙ tanh c_t ⊙ o(1 − o),   ∂c_carry ← ∂c^raw ⊙ f,   ∂m_carry ← W_hhᵀ [∂i; ∂f; ∂ĉ; ∂o]

The first step reads the initial cell unclipped (as the readable cell does); every later one reads the clipped
c_{t−1}. Without a projection (P = H) m_t = h_t and neither projection nor its clip exists.

Shape legend: K = 2 directions (the leading axis), B batch, T steps, D inputs, H cells, P projection, N = K·B rows.
"""

from __future__ import annotations

import math
import os
from typing import Any

import torch

from hf_attn.layers.cuda_graphs import GraphedLoop
from hf_attn.layers.kernels import kernels_apply

INFINITY = math.inf  # "no clip": clip(x, ∞) = x


# ---------------------------------------------------------------------------------------------------------------
# The cell, forward and backward: PyTorch twins (the reference, and the path without Triton)
# ---------------------------------------------------------------------------------------------------------------


def _clip(values: torch.Tensor, bound: float) -> torch.Tensor:
    return values if bound == INFINITY else values.clamp(-bound, bound)


def _inside(values: torch.Tensor, bound: float) -> torch.Tensor:
    """[−κ ≤ x ≤ κ] in `values`' dtype: where `clamp` passes its gradient (both ends included, as torch's)."""
    return (values.abs() <= bound).to(values.dtype)


def cell_forward(
    gates: torch.Tensor, previous: torch.Tensor, previous_clip: float, cell_clip: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """`gates (N, 4H)` pre-activations (i, f, g, o), `previous (N, H)` c_{t−1} before its clip (clipped here by
    `previous_clip`) -> `(c_t^raw (N, H), h_t (N, H), gates after σ/tanh (N, 4H))`."""
    input_gate, forget_gate, candidate, output_gate = gates.float().chunk(4, dim=-1)
    input_gate, forget_gate, output_gate = input_gate.sigmoid(), forget_gate.sigmoid(), output_gate.sigmoid()
    candidate = candidate.tanh()
    cell_raw = forget_gate * _clip(previous.float(), previous_clip) + input_gate * candidate
    hidden = output_gate * _clip(cell_raw, cell_clip).tanh()
    activated = torch.cat([input_gate, forget_gate, candidate, output_gate], dim=-1)
    return cell_raw.to(gates.dtype), hidden.to(gates.dtype), activated.to(gates.dtype)


def cell_forward_inference(
    gates: torch.Tensor, previous: torch.Tensor, previous_clip: float, cell_clip: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """`cell_forward` without what only its backward reads (the activated gates): `(c_t^raw, h_t)`, fewer
    temporaries, updated in place."""
    input_gate, forget_gate, candidate, output_gate = gates.float().chunk(4, dim=-1)
    cell_raw = torch.sigmoid(forget_gate).mul_(_clip(previous.float(), previous_clip))
    cell_raw.addcmul_(torch.sigmoid(input_gate), torch.tanh(candidate))
    hidden = torch.sigmoid(output_gate).mul_(_clip(cell_raw, cell_clip).tanh())
    return cell_raw.to(gates.dtype), hidden.to(gates.dtype)


def cell_backward(
    grad_hidden: torch.Tensor,
    grad_cell: torch.Tensor,
    activated: torch.Tensor,
    cell_raw: torch.Tensor,
    previous: torch.Tensor,
    previous_clip: float,
    cell_clip: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The module docstring's backward of one cell: ∂h `(N, H)`, the carried ∂c_t `(N, H)`, the step's activated
    gates, c_t^raw and c_{t−1} before its clip -> `(∂gate pre-activations (N, 4H), ∂c_{t−1} (N, H))`, the latter
    the gradient of the (clipped) previous cell the step read."""
    dtype = grad_hidden.dtype
    input_gate, forget_gate, candidate, output_gate = activated.float().chunk(4, dim=-1)
    cell_raw, grad_hidden = cell_raw.float(), grad_hidden.float()
    tanh_cell = _clip(cell_raw, cell_clip).tanh()
    grad = grad_cell.float() + grad_hidden * output_gate * (1 - tanh_cell * tanh_cell)
    grad = grad * _inside(cell_raw, cell_clip)
    grad_gates = torch.cat(
        [
            grad * candidate * input_gate * (1 - input_gate),
            grad * _clip(previous.float(), previous_clip) * forget_gate * (1 - forget_gate),
            grad * input_gate * (1 - candidate * candidate),
            grad_hidden * tanh_cell * output_gate * (1 - output_gate),
        ],
        dim=-1,
    )
    return grad_gates.to(dtype), (grad * forget_gate).to(dtype)


# The kernels (`triton_cells.py`) are imported on their first use only, so that `import hf_attn` does not import
# triton. Tests set this to run them on CPU tensors too (in Triton's interpreter, `TRITON_INTERPRET=1`); otherwise
# they run on CUDA tensors only, and the CPU keeps the PyTorch twins.
RUN_ON_CPU = False


def use_triton(tensor: torch.Tensor) -> bool:
    """Whether the fused cells run as Triton kernels: triton is installed, and `tensor` is on CUDA (or
    `RUN_ON_CPU`)."""
    return kernels_apply(tensor, on_cpu=RUN_ON_CPU)


# The persistent kernel (`triton_persistent.py`: one launch per layer for the T steps of both directions) takes layers
# whose recurrent weights, W_hh (4H × P) and W_proj (P × H), are at most this many elements a direction. Each of its
# programs reads them at every step through one SM, so its step time grows with them; the per-step path spreads each
# step's GEMMs over the whole GPU, which the original ELMo's 4096 × 512 cells (10.5M) need. Measured on an H200
# (`benchmarks/recurrence_paths.py`, B = 32, T = 22, P = H / 4, strict float32; µs a training step, persistent /
# per-step): H = 128 (20k weights) 93 / 111, H = 256 (82k) 79 / 111, H = 512 (328k) 159 / 119, H = 1024 (1.3M)
# 509 / 144 (`benchmarks/results/recurrence_paths.md`).
PERSISTENT_MAX_WEIGHTS = 150_000


def persistent_applies(projected: torch.Tensor, weight_hh: torch.Tensor, weight_proj: torch.Tensor | None) -> bool:
    """Whether the recurrence runs as the persistent kernel: the Triton kernels run (`use_triton`), the weights are
    small enough (`PERSISTENT_MAX_WEIGHTS`), and `HF_ATTN_ELMO_PERSISTENT` is not 0."""
    if not use_triton(projected):
        return False
    if os.environ.get("HF_ATTN_ELMO_PERSISTENT", "1").lower() in {"0", "false", "no", "off"}:
        return False
    weights = weight_hh[0].numel() + (0 if weight_proj is None else weight_proj[0].numel())
    return weights <= PERSISTENT_MAX_WEIGHTS


# ---------------------------------------------------------------------------------------------------------------
# The loops
# ---------------------------------------------------------------------------------------------------------------


def direction_product(
    left: torch.Tensor, right: torch.Tensor, bias: torch.Tensor | None = None, out: torch.Tensor | None = None
) -> torch.Tensor:
    """[bias +] left @ right for each direction of the leading axis: `left (K, B, n)`, `right (K, n, m)`, `bias
    (K, B, m)` -> `(K, B, m)` (into `out` when given). One batched GEMM on the CPU; on CUDA one GEMM a direction:
    for these skinny products (B rows against a 512 × 16384 weight) cuBLAS's batched kernel ran far slower than
    plain GEMMs of the same shapes (H200, strict float32: 135 µs a step for W_hh m_{t−1} and 619 µs for W_hhᵀ ∂gates,
    where cuDNN's per-direction GEMMs took 2 × 31 µs and 2 × 66 µs; `benchmarks/results/elmo.txt`)."""
    if not left.is_cuda:
        if bias is None:
            return torch.bmm(left, right) if out is None else torch.bmm(left, right, out=out)
        return torch.baddbmm(bias, left, right) if out is None else torch.baddbmm(bias, left, right, out=out)
    if out is None:
        out = left.new_empty(left.size(0), left.size(1), right.size(2))
    for direction in range(left.size(0)):
        if bias is None:
            torch.mm(left[direction], right[direction], out=out[direction])
        else:
            torch.addmm(bias[direction], left[direction], right[direction], out=out[direction])
    return out


def recurrence_forward(
    projected: torch.Tensor,
    weight_hh: torch.Tensor,
    weight_proj: torch.Tensor | None,
    cell: torch.Tensor,
    output: torch.Tensor,
    cell_clip: float,
    proj_clip: float,
    fused: bool,
    save: bool = True,
) -> list[torch.Tensor]:
    """The T forward steps. `projected (K, B, T, 4H)` = W_ih x_t + b; `weight_hh (K, 4H, P)`; `weight_proj (K, P, H)`
    or None; the initial `cell (K, B, H)` and `output (K, B, P)`. Returns `[m (K, B, T, P), m^raw (K, B, T, P) or
    empty, c^raw (K, B, T, H), h (K, B, T, H) or empty, activated gates (K, B, T, 4H)]`; without `save`
    (inference) only m and c^raw, the others empty: nothing is kept for a backward."""
    directions, batch, steps, gate_size = projected.shape
    size = gate_size // 4
    project = weight_proj is not None
    empty = projected.new_empty(0)
    outputs = projected.new_empty(directions, batch, steps, output.size(-1))
    raw_outputs = projected.new_empty(outputs.shape) if project and save else empty
    cells = projected.new_empty(directions, batch, steps, size)
    hiddens = projected.new_empty(cells.shape) if project and save else outputs
    activated = projected.new_empty(projected.shape) if save else empty
    hidden_scratch = projected.new_empty(directions, batch, size) if project and not save else None
    recurrent_weight = weight_hh.transpose(1, 2)  # (K, P, 4H)
    projection_weight = weight_proj.transpose(1, 2) if project else None  # (K, H, P)
    if fused:
        from .triton_cells import triton_cell_forward
    for t in range(steps):
        previous_output = output if t == 0 else outputs[:, :, t - 1]
        previous_cell, previous_clip = (cell, INFINITY) if t == 0 else (cells[:, :, t - 1], cell_clip)
        gates = direction_product(previous_output, recurrent_weight, projected[:, :, t])  # (K, B, 4H)
        hidden = hiddens[:, :, t] if hidden_scratch is None else hidden_scratch
        if fused:  # without `save` the activated gates overwrite the pre-activations (each read before its write)
            triton_cell_forward(
                gates, previous_cell, previous_clip, cell_clip, cells[:, :, t], hidden,
                activated[:, :, t] if save else gates,
            )  # fmt: skip
        elif save:
            cells[:, :, t], hiddens[:, :, t], activated[:, :, t] = cell_forward(
                gates, previous_cell, previous_clip, cell_clip
            )
        else:
            cells[:, :, t], hidden = cell_forward_inference(gates, previous_cell, previous_clip, cell_clip)
            if not project:
                outputs[:, :, t] = hidden
        if project and save:
            direction_product(hidden, projection_weight, out=raw_outputs[:, :, t])  # m^raw = W_proj h
            torch.clamp(raw_outputs[:, :, t], -proj_clip, proj_clip, out=outputs[:, :, t])
        elif project:
            outputs[:, :, t] = direction_product(hidden, projection_weight).clamp_(-proj_clip, proj_clip)
    return [outputs, raw_outputs, cells, hiddens if project and save else empty, activated]


def recurrence_backward(
    grad_outputs: torch.Tensor,
    weight_hh: torch.Tensor,
    weight_proj: torch.Tensor | None,
    cell: torch.Tensor,
    output: torch.Tensor,
    saved: list[torch.Tensor],
    cell_clip: float,
    proj_clip: float,
    fused: bool,
) -> list[torch.Tensor]:
    """The T backward steps (module docstring) for `grad_outputs (K, B, T, P)` = ∂L/∂m. `saved` is the forward's
    output list. Returns `[∂projected, ∂weight_hh, ∂weight_proj or empty, ∂cell, ∂output]`."""
    outputs, raw_outputs, cells, hiddens, activated = saved
    steps = activated.size(2)
    project = weight_proj is not None
    hiddens = hiddens if project else outputs
    grad_gates = torch.empty_like(activated)
    grad_raw = torch.empty_like(outputs)  # ∂m^raw (= ∂m without a projection)
    grad_cell = torch.zeros_like(cell)  # ∂c_t, carried
    # [|m_t^raw| ≤ κ_p] for every step at once: where the projection's clip passes its gradient
    inside = _inside(raw_outputs, proj_clip) if project and proj_clip != INFINITY else None
    if fused:
        from .triton_cells import triton_cell_backward
    for t in reversed(range(steps)):
        # ∂m_t plus the carry W_hhᵀ ∂gates_{t+1} from the step that read m_t: one GEMM
        if t == steps - 1:
            grad = grad_outputs[:, :, t]
        else:
            grad = direction_product(grad_gates[:, :, t + 1], weight_hh, grad_outputs[:, :, t])
        if inside is not None:
            grad = torch.mul(grad, inside[:, :, t], out=grad_raw[:, :, t])
        else:
            grad_raw[:, :, t] = grad
        grad_hidden = direction_product(grad, weight_proj) if project else grad  # W_projᵀ ∂m^raw, (K, B, H)
        previous_cell, previous_clip = (cell, INFINITY) if t == 0 else (cells[:, :, t - 1], cell_clip)
        if fused:
            triton_cell_backward(
                grad_hidden.contiguous(), grad_cell, activated[:, :, t], cells[:, :, t], previous_cell,
                previous_clip, cell_clip, grad_gates[:, :, t],
            )  # fmt: skip
        else:
            grad_gates[:, :, t], grad_cell = cell_backward(
                grad_hidden, grad_cell, activated[:, :, t], cells[:, :, t], previous_cell, previous_clip, cell_clip
            )
    grad_output = direction_product(grad_gates[:, :, 0], weight_hh)  # ∂m_0 = W_hhᵀ ∂gates of the first step
    return [grad_gates, *weight_gradients(grad_gates, grad_raw, outputs, output, hiddens, project), grad_cell,
            grad_output]  # fmt: skip


def weight_gradients(
    grad_gates: torch.Tensor,
    grad_raw: torch.Tensor,
    outputs: torch.Tensor,
    output: torch.Tensor,
    hiddens: torch.Tensor,
    project: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    """∂W_hh `(K, 4H, P)` and ∂W_proj `(K, P, H)` (empty without a projection), one GEMM each over all steps, from
    ∂gates `(K, B, T, 4H)`, ∂m^raw `(K, B, T, P)`, the outputs m `(K, B, T, P)` with the initial `output (K, B, P)`
    (step t read m_{t−1}; the first, m_0) and h `(K, B, T, H)`."""
    directions, batch, steps, gate_size = grad_gates.shape
    previous_outputs = torch.cat([output[:, :, None], outputs[:, :, :-1]], dim=2)
    flat_grad_gates = grad_gates.reshape(directions, batch * steps, gate_size)
    flat_previous = previous_outputs.reshape(directions, batch * steps, output.size(-1))
    grad_weight_hh = torch.bmm(flat_grad_gates.transpose(1, 2), flat_previous)
    grad_weight_proj = outputs.new_empty(0)
    if project:
        grad_weight_proj = torch.bmm(
            grad_raw.reshape(directions, batch * steps, -1).transpose(1, 2),
            hiddens.reshape(directions, batch * steps, -1),
        )
    return grad_weight_hh, grad_weight_proj


_GRAPHED_FORWARD = GraphedLoop(recurrence_forward)
_GRAPHED_BACKWARD = GraphedLoop(recurrence_backward)


def recurrence(
    projected: torch.Tensor,
    weight_hh: torch.Tensor,
    weight_proj: torch.Tensor | None,
    cell: torch.Tensor,
    output: torch.Tensor,
    cell_clip: float,
    proj_clip: float,
    save: bool,
) -> list[torch.Tensor]:
    """`recurrence_forward` on the path that applies: the persistent kernel (one launch), or the per-step loop
    (Triton cells and a CUDA graph on CUDA, the PyTorch twins elsewhere)."""
    if persistent_applies(projected, weight_hh, weight_proj):
        from .triton_persistent import elmo_persistent_forward

        return elmo_persistent_forward(projected, weight_hh, weight_proj, cell, output, cell_clip, proj_clip, save)
    fused = use_triton(projected)
    return _GRAPHED_FORWARD(projected, weight_hh, weight_proj, cell, output, cell_clip, proj_clip, fused, save)


class ElmoLstmRecurrence(torch.autograd.Function):
    """The layer's T steps, both directions, as one differentiable function (the loops above; CUDA-graphed on
    CUDA). Everything runs in `projected`'s dtype; the caller casts."""

    @staticmethod
    def forward(
        ctx: Any,
        projected: torch.Tensor,
        weight_hh: torch.Tensor,
        weight_proj: torch.Tensor | None,
        cell: torch.Tensor,
        output: torch.Tensor,
        cell_clip: float,
        proj_clip: float,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        fused, persistent = use_triton(projected), persistent_applies(projected, weight_hh, weight_proj)
        saved = recurrence(projected, weight_hh, weight_proj, cell, output, cell_clip, proj_clip, save=True)
        ctx.save_for_backward(weight_hh, weight_proj, cell, output, *saved)
        ctx.clips, ctx.fused, ctx.persistent = (cell_clip, proj_clip), fused, persistent
        outputs, cells = saved[0], saved[2]
        ctx.mark_non_differentiable(cells)
        return outputs, cells

    @staticmethod
    def backward(ctx: Any, grad_outputs: torch.Tensor | None, _grad_cells: Any) -> tuple:
        weight_hh, weight_proj, cell, output, *saved = ctx.saved_tensors
        if grad_outputs is None:
            grad_outputs = torch.zeros_like(saved[0])
        if ctx.persistent:
            from .triton_persistent import elmo_persistent_backward

            grad_projected, grad_raw, grad_cell, grad_output = elmo_persistent_backward(
                grad_outputs.contiguous(), weight_hh, weight_proj, cell, output, saved, *ctx.clips
            )
            outputs, hiddens = saved[0], saved[3] if weight_proj is not None else saved[0]
            grad_weight_hh, grad_weight_proj = weight_gradients(
                grad_projected, grad_raw, outputs, output, hiddens, weight_proj is not None
            )
        else:
            grad_projected, grad_weight_hh, grad_weight_proj, grad_cell, grad_output = _GRAPHED_BACKWARD(
                grad_outputs.contiguous(), weight_hh, weight_proj, cell, output, saved, *ctx.clips, ctx.fused
            )
        return (
            grad_projected,
            grad_weight_hh,
            grad_weight_proj if weight_proj is not None else None,
            grad_cell,
            grad_output,
            None,
            None,
        )


def elmo_lstm_recurrence(
    projected: torch.Tensor,
    weight_hh: torch.Tensor,
    weight_proj: torch.Tensor | None,
    state: tuple[torch.Tensor, torch.Tensor],
    cell_clip: float | None,
    proj_clip: float | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One ELMo LSTM layer over all steps: `projected (K, B, T, 4H)` (W_ih x_t + b), `weight_hh (K, 4H, P)`,
    `weight_proj (K, P, H)` or None, `state` = (c_0 (K, B, H), m_0 (K, B, P)); a clip of `None` is no clip.
    Returns `(m (K, B, T, P), c (K, B, T, H) after its clip)`, equal to the readable cell's loop. Under autocast
    it computes in the autocast dtype, as the readable cell's GEMMs do."""
    device_type = projected.device.type
    dtype = projected.dtype
    if torch.is_autocast_enabled(device_type):
        dtype = torch.get_autocast_dtype(device_type)
    cell_clip = INFINITY if cell_clip is None else float(cell_clip)
    proj_clip = INFINITY if proj_clip is None else float(proj_clip)
    arguments = (
        projected.to(dtype).contiguous(),
        weight_hh.to(dtype),
        None if weight_proj is None else weight_proj.to(dtype),
        state[0].to(dtype),
        state[1].to(dtype),
        cell_clip,
        proj_clip,
    )
    tensors = (projected, weight_hh, weight_proj, *state)
    needs_grad = torch.is_grad_enabled() and any(value is not None and value.requires_grad for value in tensors)
    with torch.autocast(device_type, enabled=False):
        if needs_grad:
            outputs, cells = ElmoLstmRecurrence.apply(*arguments)
        else:  # inference: nothing kept for a backward
            outputs, _, cells, _, _ = recurrence(*arguments, save=False)
    return outputs, _clip(cells, cell_clip)
