"""The LSTMN's fast recurrence: the engineering beside the paper (`modeling_lstmn.py` holds the model).

`LstmnLayer.forward_reference` in `modeling_lstmn.py` is the readable path: the equations of §3 as a loop, the tape
grown with `torch.cat`, autograd for the gradients. This module computes the same thing fast:

- the tape is preallocated (`LstmnLayerState`), and each state's key W_h h_i is computed once, when its slot is
  written (a KV cache), so a step costs one tanh over the prefix instead of re-projecting it;
- `run_recurrence` is the forward loop over steps (also used, without a graph, to continue a cached memory);
- `lstmn_recurrence` is that loop as an operator (`torch.library.custom_op`) whose backward is written by hand
  (`lstmn_recurrence_backward`): it recomputes the attention's tanh features instead of storing them, so training
  memory grows as B·T·(H + A) plus the B·T² weights, never B·T²·A. Being an operator of known output shapes, it
  sits whole inside a `torch.compile(fullgraph=True)` graph. Without a gradient to take (`record=False`) it keeps
  no trace for the backward;
- each step writes its results straight into the tape, the key cache and the trace rows, and the backward its
  gradients into their buffers' rows (the Triton step functions of `triton_steps.py` inside their kernels): on CUDA a
  step is 7 launches forward and 9 backward, replayed as a CUDA graph;
- a small intra-attention layer (`persistent_applies`) runs instead as one Triton launch for all its steps, forward
  and backward (`triton_persistent.py`).

The tests check outputs and gradients against the reference loop. Shapes as in `modeling_lstmn.py`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch

from hf_attn.layers.cuda_graphs import GraphedLoop
from hf_attn.layers.kernels import kernels_apply
from hf_attn.layers.masking import masked_softmax

# ---------------------------------------------------------------------------------------------------------------
# The memory: one layer's tape
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class LstmnLayerState:
    """One layer's memory: the tape of written states, their cached keys, which slots are readable, and the
    summaries carried to the next step's query.

    Attributes:
        tape (`(B, S, 2H)`): slot j holds [h_j; c_j]; slot 0 is the initial zero state. S is the capacity.
        keys (`(B, S, A)`): W_h h_j, computed once when slot j is written.
        valid (`(B, S)` bool): slot j ≥ 1 is readable when the token that wrote it was real.
        length (`int`): slots written so far (≥ 1).
        summary (`(B, H)`): h̃ of the last real token, the next query's W_h̃ h̃_{t−1} term.
        memory_summary (`(B, H)`, *optional*): γ̃ of the last real token (decoders with inter-attention).
    """

    tape: torch.Tensor
    keys: torch.Tensor
    valid: torch.Tensor
    length: int
    summary: torch.Tensor
    memory_summary: torch.Tensor | None = None

    @classmethod
    def empty(
        cls, batch_size: int, capacity: int, hidden_size: int, attention_size: int, like: torch.Tensor, memory: bool
    ) -> LstmnLayerState:
        """A fresh memory holding only the initial state h_0 = c_0 = 0 (slot 0, readable), room for `capacity`
        slots in all."""
        tape = like.new_zeros(batch_size, capacity, 2 * hidden_size)
        valid = torch.zeros(batch_size, capacity, dtype=torch.bool, device=like.device)
        valid[:, 0] = True
        summary = like.new_zeros(batch_size, hidden_size)
        return cls(
            tape=tape,
            keys=like.new_zeros(batch_size, capacity, attention_size),
            valid=valid,
            length=1,
            summary=summary,
            memory_summary=summary.clone() if memory else None,
        )

    def reserve(self, extra: int) -> None:
        """Makes room for `extra` more slots, doubling the capacity (amortised O(1) per generated token)."""
        needed = self.length + extra
        if needed <= self.tape.size(1):
            return
        capacity = max(needed, 2 * self.tape.size(1))
        for name in ("tape", "keys", "valid"):
            old = getattr(self, name)
            new = old.new_zeros(old.size(0), capacity, *old.shape[2:])
            new[:, : self.length] = old[:, : self.length]
            setattr(self, name, new)

    def reorder(self, index: torch.Tensor) -> None:
        """Keeps the rows `index` (beam search)."""
        for name in ("tape", "keys", "valid", "summary", "memory_summary"):
            value = getattr(self, name)
            if value is not None:
                setattr(self, name, value.index_select(0, index.to(value.device)))


# ---------------------------------------------------------------------------------------------------------------
# The recurrence
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class LstmnWeights:
    """The recurrent weights of one layer, as plain tensors (`None` where the layer has no such part).

    key (A, H): W_h.  summary (A, H): W_h̃.  score (A,): v.  recurrent (4H, H): W's h̃ columns (eq. 7).
    memory_summary (A, H): W_γ̃.  memory_score (A,): u.  memory_gate (H, H): W_r's γ̃ columns (eq. 13).
    """

    key: torch.Tensor
    summary: torch.Tensor
    score: torch.Tensor
    recurrent: torch.Tensor
    memory_summary: torch.Tensor | None = None
    memory_score: torch.Tensor | None = None
    memory_gate: torch.Tensor | None = None


def attend(
    keys: torch.Tensor,
    values: torch.Tensor,
    valid: torch.Tensor | None,
    query: torch.Tensor,
    score: torch.Tensor,
    read_out: torch.Tensor | None = None,
    weights_out: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Additive attention read, eq. 4–6 (and 10–12): weights = softmax_j(vᵀ tanh(keys_j + query)) over the valid
    slots, read = Σ_j weights_j values_j.

    Args: keys `(B, S, A)` (W_h h_j, cached), values `(B, S, D)` ([h_j; c_j]), valid `(B, S)`, query `(B, A)`
    (W_x x_t + W_h̃ h̃_{t−1} + bias), score `(A,)` (v); `read_out (B, D)` and `weights_out (B, S)`, rows of the
    trace to write into (the Triton twin writes them directly). Returns `(read (B, D), weights (B, S))`.
    """
    features = torch.add(keys, query[:, None, :]).tanh_()  # (B, S, A), the step's one O(S·A) temporary
    weights = masked_softmax(features @ score, valid)  # (B, S)
    read = torch.bmm(weights[:, None, :], values).squeeze(1)
    if read_out is not None:
        read = read_out.copy_(read)
    if weights_out is not None:
        weights = weights_out.copy_(weights)
    return read, weights


def attend_backward(
    keys: torch.Tensor,
    values: torch.Tensor,
    query: torch.Tensor,
    score: torch.Tensor,
    weights: torch.Tensor,
    grad_read: torch.Tensor,
    grad_keys: torch.Tensor,
    grad_query_out: torch.Tensor | None = None,
    grad_score_rows: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Gradients of `attend` for a given ∂L/∂read `(B, D)`, recomputing the tanh features instead of storing them.

    Adds ∂L/∂keys into `grad_keys` `(B, S, A)` in place and returns `(∂L/∂query (B, A), ∂L/∂score (A,))`;
    ∂L/∂values = weights ⊗ ∂L/∂read is left to the caller. One O(S·A) temporary, updated in place. With
    `grad_query_out` ∂query is written there; with `grad_score_rows (B, A)` each row's ∂score is added there and
    ∂score is returned as None (the caller sums the rows once, after the loop).
    """
    grad_weights = torch.bmm(values, grad_read[:, :, None]).squeeze(-1)  # (B, S)
    # softmax backward; masked slots have weight 0 and so get no gradient
    grad_scores = weights * (grad_weights - (weights * grad_weights).sum(-1, keepdim=True))
    features = torch.add(keys, query[:, None, :]).tanh_()  # (B, S, A)
    score_rows = torch.bmm(grad_scores[:, None, :], features).squeeze(1)  # each row's Σ_j g_j tanh(·), (B, A)
    features.mul_(features).sub_(1).mul_(-score)  # v ⊙ (1 − tanh²), in place
    grad_query = torch.bmm(grad_scores[:, None, :], features).squeeze(1)  # Σ_j g_j v ⊙ (1 − tanh²_j), (B, A)
    grad_keys.addcmul_(features, grad_scores[:, :, None])
    if grad_query_out is not None:
        grad_query = grad_query_out.copy_(grad_query)
    if grad_score_rows is not None:
        grad_score_rows.add_(score_rows)
        return grad_query, None
    return grad_query, score_rows.sum(0)


def _written(
    results: dict[str, torch.Tensor | None], outputs: dict[str, torch.Tensor | None] | None
) -> dict[str, torch.Tensor | None]:
    """`results` copied into the rows `outputs` names (the PyTorch twins' way of writing where the Triton step
    functions write directly), each result then the row it was written into."""
    for name, target in (outputs or {}).items():
        if target is not None and results[name] is not None:
            results[name] = target.copy_(results[name])
    return results


def cell_update(
    gate_input: torch.Tensor,
    read: torch.Tensor,
    recurrent: torch.Tensor,
    memory_read: torch.Tensor | None,
    memory_gate_input: torch.Tensor | None,
    memory_gate: torch.Tensor | None,
    outputs: dict[str, torch.Tensor | None] | None = None,
    save: bool = True,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """The LSTM update from the tape summary, eq. 7–9 (eq. 13–14 with deep fusion).

    Args: gate_input `(B, 4H)` (W x_t + b, precomputed), read `(B, 2H)` ([h̃_t; c̃_t]), recurrent `(4H, H)`,
    memory_read `(B, 2H)` ([γ̃_t; α̃_t]) with memory_gate_input `(B, H)` and memory_gate `(H, H)` for deep fusion;
    `outputs`: "hidden", "cell", "gates", "relevance" rows (tape and trace) to write into (the Triton twin writes
    them directly); without `save` (inference) the gates and r_t are not returned.
    Returns `(h_t, c_t, gates (B, 4H) after their nonlinearities or None, r_t or None)`.
    """
    hidden_size = recurrent.size(1)
    summary, summary_cell = read[:, :hidden_size], read[:, hidden_size:]
    gates = torch.addmm(gate_input, summary, recurrent.t())
    input_gate, forget_gate, candidate, output_gate = gates.chunk(4, dim=-1)
    input_gate, forget_gate, output_gate = input_gate.sigmoid(), forget_gate.sigmoid(), output_gate.sigmoid()
    candidate = candidate.tanh()
    cell = forget_gate * summary_cell + input_gate * candidate  # eq. 8
    relevance = None
    if memory_gate is not None:  # deep fusion: c_t += r_t ⊙ α̃_t (eq. 13–14)
        relevance = torch.addmm(memory_gate_input, memory_read[:, :hidden_size], memory_gate.t()).sigmoid()
        cell = cell + relevance * memory_read[:, hidden_size:]
    hidden = output_gate * cell.tanh()  # eq. 9
    activated = torch.cat([input_gate, forget_gate, candidate, output_gate], dim=-1)
    results = _written({"hidden": hidden, "cell": cell, "gates": activated, "relevance": relevance}, outputs)
    if not save:
        results["gates"] = results["relevance"] = None
    return results["hidden"], results["cell"], results["gates"], results["relevance"]


def cell_update_backward(
    grad_hidden: torch.Tensor,
    grad_cell: torch.Tensor,
    cell: torch.Tensor,
    gates: torch.Tensor,
    read: torch.Tensor,
    recurrent: torch.Tensor,
    memory_read: torch.Tensor | None,
    relevance: torch.Tensor | None,
    memory_gate: torch.Tensor | None,
    outputs: dict[str, torch.Tensor | None] | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """Gradients of `cell_update` for given ∂L/∂h_t and ∂L/∂c_t (from later steps and the outputs).

    Returns `(∂L/∂gate pre-activations (B, 4H), ∂L/∂read (B, 2H), ∂L/∂r pre-activation (B, H) or None,
    ∂L/∂memory_read (B, 2H) or None)`, written into `outputs` ("gates", "read", "relevance", "memory_read": rows
    of the gradient buffers) where given (the Triton twin writes them directly).
    """
    hidden_size = recurrent.size(1)
    input_gate, forget_gate, candidate, output_gate = gates.chunk(4, dim=-1)
    tanh_cell = cell.tanh()
    grad_output = grad_hidden * tanh_cell
    grad_cell = grad_cell + grad_hidden * output_gate * (1 - tanh_cell * tanh_cell)
    grad_gates = torch.cat(
        [
            grad_cell * candidate * input_gate * (1 - input_gate),
            grad_cell * read[:, hidden_size:] * forget_gate * (1 - forget_gate),
            grad_cell * input_gate * (1 - candidate * candidate),
            grad_output * output_gate * (1 - output_gate),
        ],
        dim=-1,
    )
    grad_summary = grad_gates @ recurrent
    results = {"gates": grad_gates, "read": torch.cat([grad_summary, grad_cell * forget_gate], dim=-1),
               "relevance": None, "memory_read": None}  # fmt: skip
    if memory_gate is not None:
        grad_relevance = grad_cell * memory_read[:, hidden_size:] * relevance * (1 - relevance)
        results["relevance"] = grad_relevance
        results["memory_read"] = torch.cat([grad_relevance @ memory_gate, grad_cell * relevance], dim=-1)
    results = _written(results, outputs)
    return results["gates"], results["read"], results["relevance"], results["memory_read"]


_STEP_FUNCTIONS = {
    "attend": attend,
    "attend_backward": attend_backward,
    "cell_update": cell_update,
    "cell_update_backward": cell_update_backward,
}
_COMPILED_STEP_FUNCTIONS: dict[str, Any] = {}


# Whether triton can be imported; `triton_steps.py` (which imports it) is imported on first use only, so that
# `import hf_attn` does not import triton. Tests set `TRITON_ON_CPU` to run the kernels on CPU tensors too (in
# Triton's interpreter, `TRITON_INTERPRET=1`); otherwise they run on CUDA tensors only.
TRITON_ON_CPU = False


def triton_applies(tensor: torch.Tensor) -> bool:
    """Whether the Triton step functions run for `tensor`: triton is installed, and the tensor is on CUDA (or on
    the CPU with `TRITON_ON_CPU`)."""
    return kernels_apply(tensor, on_cpu=TRITON_ON_CPU)


def step_functions(compiled: bool, like: torch.Tensor | None = None) -> dict[str, Any]:
    """The step functions for tensors like `like`: the Triton kernels of `triton_steps.py` on CUDA (same results,
    fewer launches), else these, compiled with `torch.compile(dynamic=True)` when asked and available."""
    if like is not None and not compiled and triton_applies(like):
        from .triton_steps import STEP_FUNCTIONS as TRITON_STEP_FUNCTIONS

        return TRITON_STEP_FUNCTIONS
    if not compiled or not hasattr(torch, "compile"):
        return _STEP_FUNCTIONS
    if not _COMPILED_STEP_FUNCTIONS:
        for name, function in _STEP_FUNCTIONS.items():
            _COMPILED_STEP_FUNCTIONS[name] = torch.compile(function, dynamic=True)
    return _COMPILED_STEP_FUNCTIONS


@dataclass
class LstmnStepInputs:
    """What the loop reads at each step, all precomputed before it (T steps, M memory slots).

    queries `(B, T, A)`: W_x x_t + bias (eq. 4).  gate_inputs `(B, T, 4H)`: W x_t + b (eq. 7).  mask `(B, T)`.
    With inter-attention: memory_queries `(B, T, A)` (W_x' x_t + bias, eq. 10), memory `(B, M, 2H)` ([γ_j; α_j]),
    memory_keys `(B, M, A)` (W_γ γ_j), memory_mask `(B, M)`; with deep fusion memory_gate_inputs `(B, T, H)`
    (W_r x_t + b, eq. 13).
    """

    queries: torch.Tensor
    gate_inputs: torch.Tensor
    mask: torch.Tensor
    memory_queries: torch.Tensor | None = None
    memory_gate_inputs: torch.Tensor | None = None
    memory: torch.Tensor | None = None
    memory_keys: torch.Tensor | None = None
    memory_mask: torch.Tensor | None = None


@dataclass
class LstmnTrace:
    """What the forward loop records per step (what the outputs and the hand-written backward need)."""

    intra_attentions: torch.Tensor  # (B, T, S_end) s^t, zero rows at padded tokens
    # The rest is what the backward reads: `None` when the loop ran without recording (no gradient to take).
    queries: torch.Tensor | None = None  # (B, T, A) the full intra query (eq. 4's W_x x_t + W_h̃ h̃_{t−1} + bias)
    previous_summaries: torch.Tensor | None = None  # (B, T, H) h̃_{t−1} used by step t
    reads: torch.Tensor | None = None  # (B, T, 2H) [h̃_t; c̃_t]
    gates: torch.Tensor | None = None  # (B, T, 4H) after their nonlinearities
    inter_attentions: torch.Tensor | None = None  # (B, T, M) p^t
    memory_queries: torch.Tensor | None = None  # (B, T, A)
    previous_memory_summaries: torch.Tensor | None = None  # (B, T, H) γ̃_{t−1}
    memory_reads: torch.Tensor | None = None  # (B, T, 2H) [γ̃_t; α̃_t]
    relevances: torch.Tensor | None = None  # (B, T, H) r_t


def run_recurrence(
    weights: LstmnWeights, inputs: LstmnStepInputs, state: LstmnLayerState, compiled: bool = False, record: bool = True
) -> LstmnTrace:
    """Runs the T steps of one layer from `state`, writing each new slot into the preallocated tape (and its key
    W_h h_t into the key cache) in place; no autograd graph is built. Returns what every step computed: the
    attention maps always, the rest of the trace (what the backward reads) only when `record`."""
    functions = step_functions(compiled, inputs.queries)
    batch_size, steps, attention_size = inputs.queries.shape
    hidden_size = weights.recurrent.size(1)
    state.reserve(steps)
    start = state.length
    like = inputs.queries
    trace = LstmnTrace(intra_attentions=like.new_zeros(batch_size, steps, start + steps - 1))
    if record:
        trace.queries = like.new_empty(batch_size, steps, attention_size)
        trace.previous_summaries = like.new_empty(batch_size, steps, hidden_size)
        trace.reads = like.new_empty(batch_size, steps, 2 * hidden_size)
        trace.gates = like.new_empty(batch_size, steps, 4 * hidden_size)
    reads_memory = inputs.memory is not None
    if reads_memory:
        trace.inter_attentions = like.new_zeros(batch_size, steps, inputs.memory.size(1))
        # the memory reads are also an output (γ̃_t, read by shallow fusion's classifier): always kept
        trace.memory_reads = like.new_empty(batch_size, steps, 2 * hidden_size)
        if record:
            trace.memory_queries = like.new_empty(batch_size, steps, attention_size)
            trace.previous_memory_summaries = like.new_empty(batch_size, steps, hidden_size)
            if weights.memory_gate is not None:
                trace.relevances = like.new_empty(batch_size, steps, hidden_size)
    mask = inputs.mask
    # Slot start + t is readable when token t is real: written once, ahead (step t reads only the slots before its
    # own), not once a step.
    state.valid[:, start : start + steps] = mask
    if record:  # h̃_{t−1} of every step: step t writes row t + 1 (the last step a tensor of its own)
        trace.previous_summaries[:, 0] = state.summary
        if reads_memory:
            trace.previous_memory_summaries[:, 0] = state.memory_summary
    deep = weights.memory_gate is not None
    for t in range(steps):
        slots = start + t  # readable slots 0 .. slots − 1; this step writes slot `slots`
        real = mask[:, t, None]  # (B, 1)

        def row(tensor: torch.Tensor | None, index: int = t) -> torch.Tensor | None:
            """Row `index` of a trace tensor, when it is recorded."""
            return None if tensor is None else tensor[:, index]

        # Every step writes its results straight into the tape, the key cache and the trace rows (the Triton step
        # functions do so inside their kernels): a step is its GEMMs and kernels, no copies around them.
        query = torch.addmm(inputs.queries[:, t], state.summary, weights.summary.t(), out=row(trace.queries))
        read, _ = functions["attend"](
            state.keys[:, :slots], state.tape[:, :slots], state.valid[:, :slots], query, weights.score,
            read_out=row(trace.reads), weights_out=trace.intra_attentions[:, t, :slots],
        )  # fmt: skip
        memory_read = memory_gate_input = None
        if reads_memory:
            memory_query = torch.addmm(
                inputs.memory_queries[:, t], state.memory_summary, weights.memory_summary.t(),
                out=row(trace.memory_queries),
            )  # eq. 10's query side  # fmt: skip
            memory_read, _ = functions["attend"](
                inputs.memory_keys, inputs.memory, inputs.memory_mask, memory_query, weights.memory_score,
                read_out=trace.memory_reads[:, t], weights_out=trace.inter_attentions[:, t],
            )  # fmt: skip
            if deep:
                memory_gate_input = inputs.memory_gate_inputs[:, t]
        written = {"hidden": state.tape[:, slots, :hidden_size], "cell": state.tape[:, slots, hidden_size:],
                   "gates": row(trace.gates), "relevance": row(trace.relevances)}  # fmt: skip
        hidden, *_ = functions["cell_update"](
            inputs.gate_inputs[:, t], read, weights.recurrent, memory_read, memory_gate_input, weights.memory_gate,
            outputs=written, save=record,
        )  # fmt: skip
        torch.mm(hidden, weights.key.t(), out=state.keys[:, slots])  # W_h h_t, cached: never projected again
        # a pad does not move h̃_{t−1} (nor γ̃_{t−1})
        last = t + 1 == steps
        summary_out = None if not record or last else trace.previous_summaries[:, t + 1]
        state.summary = torch.where(real, read[:, :hidden_size], state.summary, out=summary_out)
        if reads_memory:
            memory_out = None if not record or last else trace.previous_memory_summaries[:, t + 1]
            state.memory_summary = torch.where(
                real, memory_read[:, :hidden_size], state.memory_summary, out=memory_out
            )
    # The maps' rows at padded tokens are zero: one product for all the steps.
    real = mask[..., None].to(like.dtype)
    trace.intra_attentions.mul_(real)
    if reads_memory:
        trace.inter_attentions.mul_(real)
    state.length += steps
    return trace


# ---------------------------------------------------------------------------------------------------------------
# The recurrence as an operator: `lstmn_recurrence` and its hand-written backward
# ---------------------------------------------------------------------------------------------------------------
#
# The forward loop and its backward are two `torch.library` custom operators, tied by `register_autograd`. To
# autograd they are one differentiable op; to `torch.compile` and `torch.export` they are two nodes of known shape
# (`register_fake`): the graph around them stays whole (`fullgraph=True`), and neither the T-step loop nor its
# in-place tape writes are traced (AOT autograd cannot trace in-place writes into preallocated tapes). Absent parts
# (no inter-attention, no deep fusion) travel as `None` in and as empty tensors out: an operator's outputs are a
# fixed list of tensors.

# Outputs of `lstmn_recurrence`, in order. The first ten are the layer's; the rest are the trace the backward reads.
RECURRENCE_OUTPUTS = (
    "hidden", "cells", "memory_read", "intra_attentions", "inter_attentions",  # (B, T, ·), zero at padded tokens
    "tape", "keys", "valid", "final_summary", "final_memory_summary",  # the final memory (`LstmnLayerState`)
    "step_queries", "previous_summaries", "reads", "gates",  # the trace (`LstmnTrace`) ...
    "step_memory_queries", "previous_memory_summaries", "memory_reads", "relevances",  # ... with inter-attention
)  # fmt: skip
FLAGS = ("compiled", "record")  # `lstmn_recurrence`'s leading non-tensor arguments
_DIFFERENTIABLE = 3  # hidden, cells, memory_read: the rest are attention maps, the final memory and the trace
# The operators' namespace is this module's name: a copy of the module saved beside a checkpoint (remote code, loaded
# as `transformers_modules.….fast_recurrence`) registers its own operators beside hf_attn's instead of clashing.
_NAMESPACE = __name__.replace(".", "_")


def _or_empty(tensor: torch.Tensor | None, like: torch.Tensor) -> torch.Tensor:
    return like.new_empty(0) if tensor is None else tensor


# The persistent kernel (`triton_persistent.py`: one launch per layer and sequence) takes intra-attention layers whose
# recurrent weights are at most this many elements. Each of its programs reads every weight at every step through
# one SM, so its step time grows with them, where the per-step path spreads each step's GEMMs over the whole GPU.
# Measured on an H200 (`benchmarks/recurrence_paths.py`, B = 32, T = 256, strict float32; µs a training step,
# persistent / per-step): H = 64 (25k weights) 41 / 83, H = 128 (98k) 92 / 97, H = 256 (393k) 260 / 114, the
# paper's H = 450 (1.2M) 982 / 161 (`benchmarks/results/recurrence_paths.md`).
PERSISTENT_MAX_WEIGHTS = 100_000


def persistent_applies(queries: torch.Tensor, hidden_size: int, has_memory: bool, compiled: bool) -> bool:
    """Whether `lstmn_recurrence` runs as the persistent kernel: Triton applies (`triton_applies`), the layer reads
    no memory (inter-attention stays on the per-step path), its weights are small enough (`PERSISTENT_MAX_WEIGHTS`:
    W' (4H × H), W_h and W_h̃ (A × H) each), `compile_recurrence` is off, and `HF_ATTN_LSTMN_PERSISTENT` is not 0."""
    if compiled or has_memory or not triton_applies(queries):
        return False
    if os.environ.get("HF_ATTN_LSTMN_PERSISTENT", "1").lower() in {"0", "false", "no", "off"}:
        return False
    attention_size = queries.size(-1)
    return (4 * hidden_size + 2 * attention_size) * hidden_size <= PERSISTENT_MAX_WEIGHTS


@torch.library.custom_op(f"{_NAMESPACE}::lstmn_recurrence", mutates_args=())
def lstmn_recurrence(
    compiled: bool,
    record: bool,
    queries: torch.Tensor,
    gate_inputs: torch.Tensor,
    mask: torch.Tensor,
    key: torch.Tensor,
    summary: torch.Tensor,
    score: torch.Tensor,
    recurrent: torch.Tensor,
    memory_queries: torch.Tensor | None,
    memory_gate_inputs: torch.Tensor | None,
    memory: torch.Tensor | None,
    memory_keys: torch.Tensor | None,
    memory_mask: torch.Tensor | None,
    memory_summary: torch.Tensor | None,
    memory_score: torch.Tensor | None,
    memory_gate: torch.Tensor | None,
) -> list[torch.Tensor]:
    """One LSTMN layer over a whole sequence from the empty memory: `run_recurrence` (no graph), its outputs
    named by `RECURRENCE_OUTPUTS` (hidden, cells and memory_read γ̃_t are zero at padded tokens; parts the layer
    does not have are empty tensors). Differentiable in its first three outputs by the hand-written backward
    `lstmn_recurrence_backward`, when `record` (else the trace the backward reads is not kept: empty tensors).
    Where `persistent_applies`, one Triton launch runs the T steps; else, on CUDA, the per-step loop replays as one
    CUDA graph (`GraphedLoop`)."""
    if persistent_applies(queries, recurrent.size(1), memory is not None, compiled):
        return _persistent_recurrence(record, queries, gate_inputs, mask, key, summary, score, recurrent)
    run = _recurrence if compiled else _GRAPHED_RECURRENCE
    return run(
        compiled, record, queries, gate_inputs, mask, key, summary, score, recurrent, memory_queries,
        memory_gate_inputs, memory, memory_keys, memory_mask, memory_summary, memory_score, memory_gate,
    )  # fmt: skip


def _persistent_recurrence(
    record: bool,
    queries: torch.Tensor,
    gate_inputs: torch.Tensor,
    mask: torch.Tensor,
    key: torch.Tensor,
    summary: torch.Tensor,
    score: torch.Tensor,
    recurrent: torch.Tensor,
) -> list[torch.Tensor]:
    """`lstmn_recurrence` of an intra-attention layer in one launch (`triton_persistent.py`), the same outputs."""
    from .triton_persistent import lstmn_persistent_forward

    result = lstmn_persistent_forward(queries, gate_inputs, mask, key, summary, score, recurrent, save=record)
    hidden_size = recurrent.size(1)
    tape, real = result["tape"], mask[..., None].to(queries.dtype)
    valid = torch.cat([torch.ones_like(mask[:, :1], dtype=torch.bool), mask.bool()], dim=1)
    empty = queries.new_empty(0)
    outputs = (
        tape[:, 1:, :hidden_size] * real, tape[:, 1:, hidden_size:] * real, None, result["intra"], None,
        tape, result["keys"], valid, result["summary"], None,
        result["step_queries"], result["previous_summaries"], result["reads"], result["gates"], None, None, None, None,
    )  # fmt: skip
    return [empty.clone() if output is None else output for output in outputs]


def _recurrence(compiled: bool, record: bool, *tensors: torch.Tensor | None) -> list[torch.Tensor]:
    """The body of `lstmn_recurrence`: its tensor arguments in the order of `_INPUT_NAMES`, its outputs."""
    (
        queries, gate_inputs, mask, key, summary, score, recurrent, memory_queries, memory_gate_inputs, memory,
        memory_keys, memory_mask, memory_summary, memory_score, memory_gate,
    ) = tensors  # fmt: skip
    weights = LstmnWeights(key, summary, score, recurrent, memory_summary, memory_score, memory_gate)
    inputs = LstmnStepInputs(
        queries, gate_inputs, mask, memory_queries, memory_gate_inputs, memory, memory_keys, memory_mask
    )
    batch_size, steps, attention_size = queries.shape
    hidden_size = recurrent.size(1)
    state = LstmnLayerState.empty(batch_size, steps + 1, hidden_size, attention_size, queries, memory is not None)
    trace = run_recurrence(weights, inputs, state, compiled, record)
    real = mask[..., None].to(queries.dtype)
    memory_read = None if memory is None else trace.memory_reads[..., :hidden_size] * real
    outputs = (
        state.tape[:, 1:, :hidden_size] * real, state.tape[:, 1:, hidden_size:] * real, memory_read,
        trace.intra_attentions, trace.inter_attentions,
        state.tape, state.keys, state.valid, state.summary, state.memory_summary,
        trace.queries, trace.previous_summaries, trace.reads, trace.gates,
        trace.memory_queries, trace.previous_memory_summaries, trace.memory_reads, trace.relevances,
    )  # fmt: skip
    return [_or_empty(output, queries) for output in outputs]


@lstmn_recurrence.register_fake
def _(compiled, record, queries, gate_inputs, mask, key, summary, score, recurrent, memory_queries, memory_gate_inputs,
      memory, memory_keys, memory_mask, memory_summary, memory_score, memory_gate):  # fmt: skip
    batch_size, steps, attention_size = queries.shape
    hidden_size = recurrent.size(1)

    def new(*shape: int, dtype: torch.dtype | None = None) -> torch.Tensor:
        return queries.new_empty(shape, dtype=dtype)

    def with_memory(*shape: int) -> torch.Tensor:
        return new(*shape) if memory is not None else new(0)

    def recorded(shape: torch.Tensor) -> torch.Tensor:
        return shape if record else new(0)

    deep = memory_gate is not None
    outputs = [
        new(batch_size, steps, hidden_size), new(batch_size, steps, hidden_size),
        with_memory(batch_size, steps, hidden_size), new(batch_size, steps, steps),
        with_memory(batch_size, steps, memory.size(1) if memory is not None else 0),
        new(batch_size, steps + 1, 2 * hidden_size), new(batch_size, steps + 1, attention_size),
        new(batch_size, steps + 1, dtype=torch.bool), new(batch_size, hidden_size),
        with_memory(batch_size, hidden_size),
        recorded(new(batch_size, steps, attention_size)), recorded(new(batch_size, steps, hidden_size)),
        recorded(new(batch_size, steps, 2 * hidden_size)), recorded(new(batch_size, steps, 4 * hidden_size)),
        recorded(with_memory(batch_size, steps, attention_size)),
        recorded(with_memory(batch_size, steps, hidden_size)),
        with_memory(batch_size, steps, 2 * hidden_size),
        recorded(new(batch_size, steps, hidden_size) if deep else new(0)),
    ]  # fmt: skip
    return outputs


# Inputs of `lstmn_recurrence_backward` after the three output gradients: the forward's inputs it reads, then the
# trace. Its outputs: the gradients of `lstmn_recurrence`'s tensor inputs, in order, empty where there is none.
_BACKWARD_INPUTS = (
    "mask", "key", "summary", "score", "recurrent", "memory", "memory_keys", "memory_summary", "memory_score",
    "memory_gate", "tape", "keys", "intra_attentions", "step_queries", "previous_summaries", "reads", "gates",
    "inter_attentions", "step_memory_queries", "previous_memory_summaries", "memory_reads", "relevances",
)  # fmt: skip
_INPUT_NAMES = (
    "queries", "gate_inputs", "mask", "key", "summary", "score", "recurrent", "memory_queries", "memory_gate_inputs",
    "memory", "memory_keys", "memory_mask", "memory_summary", "memory_score", "memory_gate",
)  # fmt: skip


@torch.library.custom_op(f"{_NAMESPACE}::lstmn_recurrence_backward", mutates_args=())
def lstmn_recurrence_backward(
    compiled: bool,
    grad_hidden: torch.Tensor,
    grad_cells: torch.Tensor,
    grad_memory_read: torch.Tensor,
    saved: list[torch.Tensor],
) -> list[torch.Tensor]:
    """The hand-written backward of `lstmn_recurrence`: walks the steps in reverse with gradient tapes the size of
    the forward tapes (∂L/∂[h_j; c_j], ∂L/∂(W_h h_j)), recomputing each step's tanh features, and forms the weight
    gradients with one GEMM each at the end. `saved` holds `_BACKWARD_INPUTS` (empty tensors for absent parts).
    Returns the gradients of the forward's tensor inputs (`_INPUT_NAMES`), empty where there is none. On CUDA the
    T steps replay as one CUDA graph (`GraphedLoop`), or run as one Triton launch where `persistent_applies`."""
    named = dict(zip(_BACKWARD_INPUTS, saved, strict=True))
    if persistent_applies(named["step_queries"], grad_hidden.size(-1), named["memory"].numel() > 0, compiled):
        return _persistent_recurrence_backward(grad_hidden, grad_cells, named)
    run = _recurrence_backward if compiled else _GRAPHED_RECURRENCE_BACKWARD
    return run(compiled, grad_hidden, grad_cells, grad_memory_read, saved)


def _persistent_recurrence_backward(
    grad_hidden: torch.Tensor, grad_cells: torch.Tensor, named: dict[str, torch.Tensor]
) -> list[torch.Tensor]:
    """`lstmn_recurrence_backward` of an intra-attention layer: one launch for the T steps
    (`triton_persistent.py`), then one GEMM per weight. The same outputs."""
    from .triton_persistent import lstmn_persistent_backward

    grad_queries, grad_gate_inputs, grad_key, grad_summary, grad_score, grad_recurrent = lstmn_persistent_backward(
        grad_hidden, grad_cells, *(named[name] for name in _PERSISTENT_BACKWARD_INPUTS)
    )
    empty = grad_queries.new_empty(0)
    return [grad_queries, grad_gate_inputs, empty.clone(), grad_key, grad_summary, grad_score, grad_recurrent,
            *(empty.clone() for _ in range(8))]  # fmt: skip


_PERSISTENT_BACKWARD_INPUTS = (
    "mask", "key", "summary", "score", "recurrent", "tape", "keys", "intra_attentions", "step_queries",
    "previous_summaries", "reads", "gates",
)  # fmt: skip


def _recurrence_backward(
    compiled: bool,
    grad_hidden: torch.Tensor,
    grad_cells: torch.Tensor,
    grad_memory_read: torch.Tensor,
    saved: list[torch.Tensor],
) -> list[torch.Tensor]:
    """The body of `lstmn_recurrence_backward` (its arguments and outputs)."""
    (
        mask, key, summary, score, recurrent, memory, memory_keys, memory_summary, memory_score, memory_gate,
        tape, keys, intra, queries, previous_summaries, reads, gates, inter, memory_queries,
        previous_memory_summaries, memory_reads, relevances,
    ) = saved  # fmt: skip
    has_memory, deep = memory.numel() > 0, memory_gate.numel() > 0
    functions = step_functions(compiled, tape)
    steps, hidden_size = mask.size(1), recurrent.size(1)
    real = mask[..., None].to(tape.dtype)  # (B, T, 1)
    pad = 1 - real
    # ∂L/∂[h_j; c_j] per tape slot, seeded with the outputs' gradients
    grad_tape = torch.zeros_like(tape)
    grad_tape[:, 1:, :hidden_size] = grad_hidden * real
    grad_tape[:, 1:, hidden_size:] = grad_cells * real
    grad_keys = torch.zeros_like(keys)  # ∂L/∂(W_h h_j)
    grad_gate_inputs = torch.empty_like(gates)
    grad_queries = torch.empty_like(queries)
    grad_score_rows = queries.new_zeros(queries.size(0), queries.size(2))  # each row's ∂v, summed after the loop
    grad_carry = torch.zeros_like(previous_summaries[:, 0])  # ∂L/∂h̃ carried to the next query
    if has_memory:
        grad_memory_keys = torch.zeros_like(memory_keys)
        grad_memory_queries = torch.empty_like(memory_queries)
        grad_memory_score_rows = torch.zeros_like(grad_score_rows)
        grad_memory_carry = torch.zeros_like(grad_carry)
        grad_memory_gate_inputs = torch.empty_like(relevances) if deep else None
        grad_memory_reads = torch.zeros_like(memory_reads)  # ∂L/∂[γ̃_t; α̃_t]
    grad_reads = torch.zeros_like(reads)  # ∂L/∂[h̃_t; c̃_t]
    # Every step writes its gradients straight into these buffers' rows (the Triton step functions inside their
    # kernels), and the carries are updated in place: a step is its GEMMs and kernels, no copies around them.
    for t in reversed(range(steps)):
        slots = t + 1
        # Slot t + 1 was read by every later step u with weight s_u[t + 1]: gathered once, here, as one
        # (B, 1, T−t−1) × (B, T−t−1, 2H) product, instead of scattering every step's read into all its slots.
        if slots < steps:  # the last step's slot is read by no one
            later = intra[:, slots:, slots, None].transpose(1, 2)  # (B, 1, T−t−1)
            grad_tape[:, slots : slots + 1].baddbmm_(later, grad_reads[:, slots:])
        grad_hidden_t = torch.addmm(grad_tape[:, slots, :hidden_size], grad_keys[:, slots], key)
        written = {"gates": grad_gate_inputs[:, t], "read": grad_reads[:, t],
                   "relevance": grad_memory_gate_inputs[:, t] if deep else None,
                   "memory_read": grad_memory_reads[:, t] if deep else None}  # fmt: skip
        _, grad_read, _, grad_memory_read_t = functions["cell_update_backward"](
            grad_hidden_t,
            grad_tape[:, slots, hidden_size:],
            tape[:, slots, hidden_size:],
            gates[:, t],
            reads[:, t],
            recurrent,
            memory_reads[:, t] if deep else None,
            relevances[:, t] if deep else None,
            memory_gate if deep else None,
            outputs=written,
        )
        # h̃_t also fed the next real step's query (through the carry), which stops at a real token
        grad_read[:, :hidden_size].addcmul_(real[:, t], grad_carry)
        grad_carry.mul_(pad[:, t])
        grad_query, _ = functions["attend_backward"](
            keys[:, :slots], tape[:, :slots], queries[:, t], score, intra[:, t, :slots], grad_read,
            grad_keys[:, :slots], grad_query_out=grad_queries[:, t], grad_score_rows=grad_score_rows,
        )  # fmt: skip
        grad_carry.addmm_(grad_query, summary)
        if has_memory:
            if grad_memory_read_t is None:  # no deep fusion: the buffer's zero row
                grad_memory_read_t = grad_memory_reads[:, t]
            # γ̃_t is also an output (shallow fusion's classifier reads it) and fed the next real step's query
            grad_memory_read_t[:, :hidden_size].addcmul_(real[:, t], grad_memory_read[:, t] + grad_memory_carry)
            grad_memory_carry.mul_(pad[:, t])
            grad_memory_query, _ = functions["attend_backward"](
                memory_keys, memory, memory_queries[:, t], memory_score, inter[:, t], grad_memory_read_t,
                grad_memory_keys, grad_query_out=grad_memory_queries[:, t], grad_score_rows=grad_memory_score_rows,
            )  # fmt: skip
            grad_memory_carry.addmm_(grad_memory_query, memory_summary)
    grad_score = grad_score_rows.sum(0)

    def flat(tensor: torch.Tensor) -> torch.Tensor:
        return tensor.reshape(-1, tensor.size(-1))

    empty = tape.new_empty(0)
    grad_key = flat(grad_keys[:, 1:]).t() @ flat(tape[:, 1:, :hidden_size])
    grad_summary = flat(grad_queries).t() @ flat(previous_summaries)
    grad_recurrent = flat(grad_gate_inputs).t() @ flat(reads[..., :hidden_size])
    grads_memory = [empty.clone() for _ in range(8)]
    if has_memory:
        grads_memory = [
            grad_memory_queries,
            grad_memory_gate_inputs if deep else empty.clone(),
            torch.bmm(inter.transpose(1, 2), grad_memory_reads),  # ∂L/∂[γ_j; α_j] = Σ_t p_t[j] ∂L/∂[γ̃_t; α̃_t]
            grad_memory_keys,
            empty.clone(),  # memory_mask
            flat(grad_memory_queries).t() @ flat(previous_memory_summaries),
            grad_memory_score_rows.sum(0),
            flat(grad_memory_gate_inputs).t() @ flat(memory_reads[..., :hidden_size]) if deep else empty.clone(),
        ]
    return [grad_queries, grad_gate_inputs, empty.clone(), grad_key, grad_summary, grad_score, grad_recurrent,
            *grads_memory]  # fmt: skip


_GRAPHED_RECURRENCE = GraphedLoop(_recurrence)
_GRAPHED_RECURRENCE_BACKWARD = GraphedLoop(_recurrence_backward)


@lstmn_recurrence_backward.register_fake
def _(compiled, grad_hidden, grad_cells, grad_memory_read, saved):
    named = dict(zip(_BACKWARD_INPUTS, saved, strict=True))
    key, summary, score, recurrent = named["key"], named["summary"], named["score"], named["recurrent"]
    memory, memory_keys, memory_gate = named["memory"], named["memory_keys"], named["memory_gate"]
    memory_summary, memory_score = named["memory_summary"], named["memory_score"]
    queries, gates, memory_queries = named["step_queries"], named["gates"], named["step_memory_queries"]
    relevances = named["relevances"]
    empty = queries.new_empty(0)
    like = torch.empty_like
    has_memory = memory.numel() > 0
    grads_memory = [empty.clone() for _ in range(8)]
    if has_memory:
        grads_memory = [
            like(memory_queries), like(relevances), like(memory), like(memory_keys), empty.clone(),
            like(memory_summary), like(memory_score), like(memory_gate),
        ]  # fmt: skip
    return [like(queries), like(gates), empty.clone(), like(key), like(summary), like(score), like(recurrent),
            *grads_memory]  # fmt: skip


def _setup_context(ctx: Any, inputs: tuple, output: list[torch.Tensor]) -> None:
    named_inputs = dict(zip(("compiled", "record", *_INPUT_NAMES), inputs, strict=True))
    named = {name: _or_empty(value, output[0]) for name, value in named_inputs.items() if name not in FLAGS}
    named.update(zip(RECURRENCE_OUTPUTS, output, strict=True))
    ctx.compiled, ctx.recorded = inputs[0], inputs[1]
    ctx.set_materialize_grads(False)  # the outputs without a gradient (maps, memory, trace) stay None: no zero fills
    ctx.present = [value is not None for value in inputs[len(FLAGS) :]]
    ctx.mark_non_differentiable(*output[_DIFFERENTIABLE:])
    ctx.save_for_backward(*(named[name] for name in _BACKWARD_INPUTS))


def _backward(ctx: Any, grads: list[torch.Tensor | None]) -> tuple[torch.Tensor | None, ...]:
    """Autograd's backward of `lstmn_recurrence`: `grads` are its outputs' gradients (the op returns one list)."""
    if not ctx.recorded:
        raise RuntimeError(
            "lstmn_recurrence ran with record=False (no trace kept), so it has no backward: pass record=True "
            "whenever a gradient may be taken (LstmnLayer.forward does)"
        )
    saved = list(ctx.saved_tensors)
    tape, memory = saved[_BACKWARD_INPUTS.index("tape")], saved[_BACKWARD_INPUTS.index("memory")]
    zeros = torch.zeros_like(tape[:, 1:, : tape.size(-1) // 2])  # (B, T, H): the gradient of an unused output
    grad_hidden, grad_cells, grad_memory_read = (zeros if grad is None else grad for grad in grads[:_DIFFERENTIABLE])
    if memory.numel() and grad_memory_read.numel() == 0:
        grad_memory_read = zeros
    grads = lstmn_recurrence_backward(ctx.compiled, grad_hidden, grad_cells, grad_memory_read, saved)
    return (None, None, *(grad if present else None for grad, present in zip(grads, ctx.present, strict=True)))


lstmn_recurrence.register_autograd(_backward, setup_context=_setup_context)


def scan_recurrence(
    layer: Any,
    inputs: torch.Tensor,
    mask: torch.Tensor,
    memory: Any | None = None,
    memory_mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, ...]:
    """The layer's `forward_reference` as one `scan` over the steps, for `torch.export` and ONNX at any length:
    the tape is `(B, T, ·)` from the start, slot t + 1 written by step t (slot 0 is h_0 = 0; the last step's
    state is read by no step), and `valid` grows with it. Same weights, same outputs: the hidden states, cells,
    intra-attention, memory reads and inter-attention, each `(B, T, ·)` (the last two zeros without fusion).
    `layer`: an `LstmnLayer` (`modeling_lstmn.py`), whose step functions it runs."""
    from torch._higher_order_ops.scan import scan

    batch_size, steps, _ = inputs.shape
    parts = list(layer.input_projection(inputs).split(layer.split_sizes, dim=-1))
    slots = torch.arange(steps, device=inputs.device)
    zeros = inputs.new_zeros(batch_size, layer.hidden_size)
    carry = (
        inputs.new_zeros(batch_size, steps, layer.hidden_size),  # hidden tape
        inputs.new_zeros(batch_size, steps, layer.hidden_size),  # cell tape
        (slots == 0)[None, :].expand(batch_size, steps).clone(),  # valid slots: h_0 only
        zeros.clone(),  # summary h̃_{t−1}
        zeros.clone(),  # memory summary γ̃_{t−1}
    )
    per_step = [parts[0], parts[1], mask[..., None].to(inputs.dtype), *parts[2:]]  # with fusion: W_x' x, W_r x

    def step(carry, xs):
        hidden_tape, cell_tape, valid, summary, memory_summary = carry
        index, (query, gate_input, real, *memory_inputs) = xs[0], xs[1:]
        weights, read_hidden, cell, output_gate = layer._intra_step(
            hidden_tape, cell_tape, valid, summary, query, gate_input
        )
        memory_weights = memory_hidden = zeros  # placeholders of the outputs without fusion (dropped below)
        if layer.reads_memory:
            memory_gate_input = memory_inputs[1] if layer.deep else None
            memory_weights, memory_hidden, cell = layer._inter_step(
                memory, memory_mask, memory_summary, memory_inputs[0], memory_gate_input, cell
            )
            memory_summary = torch.where(real.bool(), memory_hidden, memory_summary)
        else:
            memory_summary = memory_summary.clone()  # a scan's carry out must not alias its carry in
        hidden = output_gate.sigmoid() * cell.tanh()
        written = (slots == index + 1)[None, :]  # (1, T): slot t + 1
        hidden_tape = hidden_tape + written[..., None] * hidden[:, None]
        cell_tape = cell_tape + written[..., None] * cell[:, None]
        valid = valid | (written & real.bool())
        summary = torch.where(real.bool(), read_hidden, summary)
        outputs = (hidden * real, cell * real, weights * real, memory_hidden * real, memory_weights * real)
        return (hidden_tape, cell_tape, valid, summary, memory_summary), outputs

    xs = [slots, *(value.transpose(0, 1) for value in per_step)]
    _, outputs = scan(step, carry, xs)  # each (T, B, ·)
    return tuple(value.transpose(0, 1) for value in outputs)
