"""The LSTMN's step functions as Triton kernels: the same four functions as `fast_recurrence.py`'s, fused.

`fast_recurrence.run_recurrence` and `lstmn_recurrence_backward` call four step functions per step: `attend` and
`cell_update` forward, `attend_backward` and `cell_update_backward` backward. In PyTorch each is a chain of a
dozen small kernels. Here each has the same signature and results, computed by two or three kernels:

- `attend` (eq. 4–6): `_scores_kernel`, one program per (row, block of slots), forms a_j = vᵀ tanh(k_j + q) with
  the tanh features never leaving registers; `_read_kernel`, one program per (row, block of features), takes the
  masked softmax of its row's scores (a row's S scores are few, so each program reduces them itself) and its
  block of Σ_j s_j [h_j; c_j].
- `attend_backward`: `_grad_weights_kernel` forms ∂s_j = [h_j; c_j]·∂read per slot; `_attend_backward_kernel`,
  one program per (row, block of A features), recomputes tanh, applies the softmax backward
  ∂a_j = s_j (∂s_j − Σ_i s_i ∂s_i), and accumulates ∂q = Σ_j ∂a_j v ⊙ (1 − tanh²), ∂k_j += ∂a_j v ⊙ (1 − tanh²) in
  place and ∂v row by row (summed over the batch by the caller: no atomics, the same sums every run).
- `cell_update` (eq. 7–9, 13–14): the two GEMMs stay cuBLAS'; `_cell_kernel` applies the gates' nonlinearities,
  the cell, deep fusion's r_t ⊙ α̃_t and h_t = o ⊙ tanh c_t in one pass; `_cell_backward_kernel` is its backward.

Each writes its results straight into the row views it is given (`read_out`, `weights_out`, `outputs`: rows of
the tape, the key cache, the trace and the gradient buffers, row-strided), so that the loop around them makes no
copies. They run on CUDA when triton is installed (`fast_recurrence.step_functions`, which imports this module on first
use only: `import hf_attn` does not import triton), and on the CPU in Triton's interpreter (`TRITON_INTERPRET=1`,
`fast_recurrence.TRITON_ON_CPU`), where the tests check them against the PyTorch step functions. Masked slots
follow `masked_softmax`: weight exactly 0, and a row with no readable slot gives zeros, never NaN.

Shapes as in `fast_recurrence.py`: B batch, S readable slots, A attention size, D = 2H values, H hidden size.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from hf_attn.layers.triton_math import sigmoid, tanh

_SLOT_BLOCK = 32  # slots per program in the score and gradient passes
_FEATURE_BLOCK = 64  # attention features (A) or values (D) per inner step / per program


@triton.jit
def _scores_kernel(
    keys, keys_batch, keys_slot, query, query_batch, score, scores, slots, attention_size,
    SLOTS: tl.constexpr, FEATURES: tl.constexpr,
):  # fmt: skip
    # a_j = Σ_a v_a tanh(k_ja + q_a) for this program's block of slots (eq. 4), into `scores (B, S)` float32.
    row, block = tl.program_id(0), tl.program_id(1)
    slot = block * SLOTS + tl.arange(0, SLOTS)
    in_row = slot < slots
    total = tl.zeros([SLOTS], dtype=tl.float32)
    for start in range(0, attention_size, FEATURES):
        feature = start + tl.arange(0, FEATURES)
        in_features = feature < attention_size
        key = tl.load(
            keys + row * keys_batch + slot[:, None] * keys_slot + feature[None, :],
            mask=in_row[:, None] & in_features[None, :], other=0.0,
        ).to(tl.float32)  # fmt: skip
        q = tl.load(query + row * query_batch + feature, mask=in_features, other=0.0).to(tl.float32)
        v = tl.load(score + feature, mask=in_features, other=0.0).to(tl.float32)
        total += tl.sum(tanh(key + q[None, :]) * v[None, :], axis=1)
    tl.store(scores + row * slots + slot, total, mask=in_row)


@triton.jit
def _row_softmax(scores, valid, valid_batch, valid_slot, row, slots, SLOTS: tl.constexpr):
    # The masked softmax's max and normaliser over one row's S scores (masked slots filled with the float32
    # minimum, as `masked_softmax` does: a row with no readable slot is uniform there, then zeroed).
    lowest = -3.4028234663852886e38
    largest = tl.full([SLOTS], lowest, dtype=tl.float32)
    for start in range(0, slots, SLOTS):
        slot = start + tl.arange(0, SLOTS)
        in_row = slot < slots
        readable = tl.load(valid + row * valid_batch + slot * valid_slot, mask=in_row, other=0) != 0
        value = tl.load(scores + row * slots + slot, mask=in_row, other=0.0)
        largest = tl.maximum(largest, tl.where(in_row, tl.where(readable, value, lowest), lowest))
    top = tl.max(largest, axis=0)
    normaliser = tl.zeros([SLOTS], dtype=tl.float32)
    for start in range(0, slots, SLOTS):
        slot = start + tl.arange(0, SLOTS)
        in_row = slot < slots
        readable = tl.load(valid + row * valid_batch + slot * valid_slot, mask=in_row, other=0) != 0
        value = tl.load(scores + row * slots + slot, mask=in_row, other=0.0)
        normaliser += tl.where(in_row, tl.exp(tl.where(readable, value, lowest) - top), 0.0)
    return top, tl.sum(normaliser, axis=0)


@triton.jit
def _read_kernel(
    scores, valid, valid_batch, valid_slot, values, values_batch, values_slot, weights, weights_batch, read,
    read_batch, slots, size, SLOTS: tl.constexpr, FEATURES: tl.constexpr,
):  # fmt: skip
    # s = masked softmax(a) (eq. 5) and this program's block of Σ_j s_j values_j (eq. 6); the program of the
    # first block also writes s into `weights (B, S)`.
    row, block = tl.program_id(0), tl.program_id(1)
    lowest = -3.4028234663852886e38
    top, normaliser = _row_softmax(scores, valid, valid_batch, valid_slot, row, slots, SLOTS)
    feature = block * FEATURES + tl.arange(0, FEATURES)
    in_features = feature < size
    total = tl.zeros([FEATURES], dtype=tl.float32)
    for start in range(0, slots, SLOTS):
        slot = start + tl.arange(0, SLOTS)
        in_row = slot < slots
        readable = tl.load(valid + row * valid_batch + slot * valid_slot, mask=in_row, other=0) != 0
        value = tl.load(scores + row * slots + slot, mask=in_row, other=0.0)
        weight = tl.exp(tl.where(readable, value, lowest) - top) / normaliser
        weight = tl.where(in_row & readable, weight, 0.0)
        if block == 0:
            tl.store(weights + row * weights_batch + slot, weight, mask=in_row)
        vectors = tl.load(
            values + row * values_batch + slot[:, None] * values_slot + feature[None, :],
            mask=in_row[:, None] & in_features[None, :], other=0.0,
        ).to(tl.float32)  # fmt: skip
        total += tl.sum(weight[:, None] * vectors, axis=0)
    tl.store(read + row * read_batch + feature, total, mask=in_features)


@triton.jit
def _grad_weights_kernel(
    values, values_batch, values_slot, grad_read, grad_read_batch, grad_weights, slots, size,
    SLOTS: tl.constexpr, FEATURES: tl.constexpr,
):  # fmt: skip
    # ∂s_j = values_j · ∂read for this program's block of slots, into `grad_weights (B, S)` float32.
    row, block = tl.program_id(0), tl.program_id(1)
    slot = block * SLOTS + tl.arange(0, SLOTS)
    in_row = slot < slots
    total = tl.zeros([SLOTS], dtype=tl.float32)
    for start in range(0, size, FEATURES):
        feature = start + tl.arange(0, FEATURES)
        in_features = feature < size
        vectors = tl.load(
            values + row * values_batch + slot[:, None] * values_slot + feature[None, :],
            mask=in_row[:, None] & in_features[None, :], other=0.0,
        ).to(tl.float32)  # fmt: skip
        gradient = tl.load(grad_read + row * grad_read_batch + feature, mask=in_features, other=0.0).to(tl.float32)
        total += tl.sum(vectors * gradient[None, :], axis=1)
    tl.store(grad_weights + row * slots + slot, total, mask=in_row)


@triton.jit
def _attend_backward_kernel(
    keys, keys_batch, keys_slot, query, query_batch, score, weights, weights_batch, grad_weights, grad_keys,
    grad_keys_batch, grad_keys_slot, grad_query, grad_query_batch, grad_score_rows, slots, attention_size,
    SLOTS: tl.constexpr, FEATURES: tl.constexpr,
):  # fmt: skip
    # For this program's block of attention features: ∂a_j = s_j (∂s_j − Σ_i s_i ∂s_i) (softmax backward),
    # then with t_j = tanh(k_j + q): ∂k_j += ∂a_j v ⊙ (1 − t_j²) (in place), ∂q = Σ_j of the same, and this
    # row's share of ∂v = Σ_j ∂a_j t_j, added into `grad_score_rows (B, A)` (float32, summed by the caller).
    row, block = tl.program_id(0), tl.program_id(1)
    mean = tl.zeros([SLOTS], dtype=tl.float32)
    for start in range(0, slots, SLOTS):
        slot = start + tl.arange(0, SLOTS)
        in_row = slot < slots
        weight = tl.load(weights + row * weights_batch + slot, mask=in_row, other=0.0).to(tl.float32)
        mean += weight * tl.load(grad_weights + row * slots + slot, mask=in_row, other=0.0)
    expected = tl.sum(mean, axis=0)
    feature = block * FEATURES + tl.arange(0, FEATURES)
    in_features = feature < attention_size
    q = tl.load(query + row * query_batch + feature, mask=in_features, other=0.0).to(tl.float32)
    v = tl.load(score + feature, mask=in_features, other=0.0).to(tl.float32)
    total_query = tl.zeros([FEATURES], dtype=tl.float32)
    total_score = tl.zeros([FEATURES], dtype=tl.float32)
    for start in range(0, slots, SLOTS):
        slot = start + tl.arange(0, SLOTS)
        in_row = slot < slots
        weight = tl.load(weights + row * weights_batch + slot, mask=in_row, other=0.0).to(tl.float32)
        grad_weight = tl.load(grad_weights + row * slots + slot, mask=in_row, other=0.0)
        grad_score = weight * (grad_weight - expected)  # (SLOTS,); 0 where the weight is 0 (masked slots)
        tile = in_row[:, None] & in_features[None, :]
        key = tl.load(keys + row * keys_batch + slot[:, None] * keys_slot + feature[None, :], mask=tile, other=0.0).to(
            tl.float32
        )
        features = tanh(key + q[None, :])
        total_score += tl.sum(grad_score[:, None] * features, axis=0)
        grad_features = grad_score[:, None] * (v[None, :] * (1.0 - features * features))
        total_query += tl.sum(grad_features, axis=0)
        key_gradients = grad_keys + row * grad_keys_batch + slot[:, None] * grad_keys_slot + feature[None, :]
        tl.store(key_gradients, tl.load(key_gradients, mask=tile, other=0.0) + grad_features, mask=tile)
    tl.store(grad_query + row * grad_query_batch + feature, total_query, mask=in_features)
    score_rows = grad_score_rows + row * attention_size + feature
    tl.store(score_rows, tl.load(score_rows, mask=in_features, other=0.0) + total_score, mask=in_features)


@triton.jit
def _cell_kernel(
    gates, read, read_batch, relevance_input, memory_read, memory_read_batch, hidden, hidden_batch, cell, cell_batch,
    activated, activated_batch, relevance, relevance_batch, size,
    DEEP: tl.constexpr, SAVE: tl.constexpr, FEATURES: tl.constexpr,
):  # fmt: skip
    # eq. 7–9 (and 13–14): i, f, o = σ(·), ĉ = tanh(·); c = f ⊙ c̃ + i ⊙ ĉ (+ r ⊙ α̃); h = o ⊙ tanh(c). `gates` and
    # `relevance_input` are contiguous (fresh GEMM outputs); the rest are row-strided views (trace and tape rows);
    # without SAVE the activated gates and r_t are not written (inference).
    row, block = tl.program_id(0), tl.program_id(1)
    feature = block * FEATURES + tl.arange(0, FEATURES)
    keep = feature < size
    gate_row = gates + row * 4 * size + feature
    input_gate = sigmoid(tl.load(gate_row, mask=keep, other=0.0).to(tl.float32))
    forget_gate = sigmoid(tl.load(gate_row + size, mask=keep, other=0.0).to(tl.float32))
    candidate = tanh(tl.load(gate_row + 2 * size, mask=keep, other=0.0).to(tl.float32))
    output_gate = sigmoid(tl.load(gate_row + 3 * size, mask=keep, other=0.0).to(tl.float32))
    summary_cell = tl.load(read + row * read_batch + size + feature, mask=keep, other=0.0).to(tl.float32)
    new_cell = forget_gate * summary_cell + input_gate * candidate
    if DEEP:
        gate = sigmoid(tl.load(relevance_input + row * size + feature, mask=keep, other=0.0).to(tl.float32))
        memory_cell = tl.load(memory_read + row * memory_read_batch + size + feature, mask=keep, other=0.0)
        new_cell += gate * memory_cell.to(tl.float32)
        if SAVE:
            tl.store(relevance + row * relevance_batch + feature, gate, mask=keep)
    tl.store(cell + row * cell_batch + feature, new_cell, mask=keep)
    tl.store(hidden + row * hidden_batch + feature, output_gate * tanh(new_cell), mask=keep)
    if SAVE:
        activated_row = activated + row * activated_batch + feature
        tl.store(activated_row, input_gate, mask=keep)
        tl.store(activated_row + size, forget_gate, mask=keep)
        tl.store(activated_row + 2 * size, candidate, mask=keep)
        tl.store(activated_row + 3 * size, output_gate, mask=keep)


@triton.jit
def _cell_backward_kernel(
    grad_hidden, grad_cell, grad_cell_batch, cell, cell_batch, activated, activated_batch, read, read_batch,
    memory_read, memory_read_batch, relevance, relevance_batch, grad_gates, grad_gates_batch, grad_read,
    grad_read_batch, grad_relevance, grad_relevance_batch, grad_memory_read, grad_memory_read_batch, size,
    DEEP: tl.constexpr, FEATURES: tl.constexpr,
):  # fmt: skip
    # The backward of `_cell_kernel`: ∂gates (pre-activation), ∂c̃ = ∂c ⊙ f into ∂read's cell half, and with
    # deep fusion ∂r (pre-activation) and ∂α̃ = ∂c ⊙ r. `grad_hidden` is contiguous, the rest row-strided views.
    row, block = tl.program_id(0), tl.program_id(1)
    feature = block * FEATURES + tl.arange(0, FEATURES)
    keep = feature < size
    activated_row = activated + row * activated_batch + feature
    input_gate = tl.load(activated_row, mask=keep, other=0.0).to(tl.float32)
    forget_gate = tl.load(activated_row + size, mask=keep, other=0.0).to(tl.float32)
    candidate = tl.load(activated_row + 2 * size, mask=keep, other=0.0).to(tl.float32)
    output_gate = tl.load(activated_row + 3 * size, mask=keep, other=0.0).to(tl.float32)
    tanh_cell = tanh(tl.load(cell + row * cell_batch + feature, mask=keep, other=0.0).to(tl.float32))
    grad_out = tl.load(grad_hidden + row * size + feature, mask=keep, other=0.0).to(tl.float32)
    grad = tl.load(grad_cell + row * grad_cell_batch + feature, mask=keep, other=0.0).to(tl.float32)
    grad += grad_out * output_gate * (1.0 - tanh_cell * tanh_cell)
    summary_cell = tl.load(read + row * read_batch + size + feature, mask=keep, other=0.0).to(tl.float32)
    grad_row = grad_gates + row * grad_gates_batch + feature
    tl.store(grad_row, grad * candidate * input_gate * (1.0 - input_gate), mask=keep)
    tl.store(grad_row + size, grad * summary_cell * forget_gate * (1.0 - forget_gate), mask=keep)
    tl.store(grad_row + 2 * size, grad * input_gate * (1.0 - candidate * candidate), mask=keep)
    tl.store(grad_row + 3 * size, grad_out * tanh_cell * output_gate * (1.0 - output_gate), mask=keep)
    tl.store(grad_read + row * grad_read_batch + size + feature, grad * forget_gate, mask=keep)
    if DEEP:
        gate = tl.load(relevance + row * relevance_batch + feature, mask=keep, other=0.0).to(tl.float32)
        memory_cell = tl.load(memory_read + row * memory_read_batch + size + feature, mask=keep, other=0.0)
        tl.store(grad_relevance + row * grad_relevance_batch + feature,
                 grad * memory_cell.to(tl.float32) * gate * (1.0 - gate), mask=keep)  # fmt: skip
        tl.store(grad_memory_read + row * grad_memory_read_batch + size + feature, grad * gate, mask=keep)


def _strides(tensor: torch.Tensor) -> tuple[int, int]:
    """(batch, slot) strides of a `(B, S, ·)` view whose last axis is contiguous (a prefix of a preallocated
    tape)."""
    if tensor.stride(-1) != 1:
        raise ValueError("LSTMN kernels read (B, S, ·) views whose last axis is contiguous")
    return tensor.stride(0), tensor.stride(1)


def _rows(tensor: torch.Tensor) -> int:
    """The row stride of a `(B, ·)` view whose last axis is contiguous (a step's row of a trace or tape)."""
    if tensor.stride(-1) != 1:
        raise ValueError("LSTMN kernels write (B, ·) views whose last axis is contiguous")
    return tensor.stride(0)


def attend(
    keys: torch.Tensor,
    values: torch.Tensor,
    valid: torch.Tensor | None,
    query: torch.Tensor,
    score: torch.Tensor,
    read_out: torch.Tensor | None = None,
    weights_out: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """`fast_recurrence.attend` by `_scores_kernel` and `_read_kernel`: `(read (B, D), weights (B, S))`, written
    straight into `read_out` and `weights_out` (row views of the trace) when given."""
    batch, slots, attention_size = keys.shape
    size = values.size(-1)
    if valid is None:
        valid = torch.ones(batch, slots, dtype=torch.bool, device=keys.device)
    valid = valid.view(torch.uint8) if valid.dtype == torch.bool else valid  # a view: no copy
    score = score.contiguous()
    scores = keys.new_empty(batch, slots, dtype=torch.float32)
    weights = keys.new_empty(batch, slots) if weights_out is None else weights_out
    read = keys.new_empty(batch, size) if read_out is None else read_out
    if slots == 0:
        return read.zero_(), weights
    _scores_kernel[(batch, triton.cdiv(slots, _SLOT_BLOCK))](
        keys, *_strides(keys), query, _rows(query), score, scores, slots, attention_size,
        SLOTS=_SLOT_BLOCK, FEATURES=_FEATURE_BLOCK,
    )  # fmt: skip
    _read_kernel[(batch, triton.cdiv(size, _FEATURE_BLOCK))](
        scores, valid, *valid.stride(), values, *_strides(values), weights, _rows(weights), read, _rows(read),
        slots, size, SLOTS=_SLOT_BLOCK, FEATURES=_FEATURE_BLOCK,
    )  # fmt: skip
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
    """`fast_recurrence.attend_backward` by `_grad_weights_kernel` and `_attend_backward_kernel`: adds ∂keys into
    `grad_keys` in place and returns `(∂query (B, A), ∂score (A,))`; ∂query written into `grad_query_out` and
    each row's ∂score added into `grad_score_rows (B, A)` when given (then ∂score is None: the caller sums the rows
    once)."""
    batch, slots, attention_size = keys.shape
    size = values.size(-1)
    score = score.contiguous()
    accumulate = grad_score_rows is not None
    grad_weights = keys.new_empty(batch, slots, dtype=torch.float32)
    grad_query = keys.new_empty(batch, attention_size) if grad_query_out is None else grad_query_out
    if not accumulate:
        grad_score_rows = keys.new_zeros(batch, attention_size, dtype=torch.float32)
    if slots == 0:
        return grad_query.zero_(), None if accumulate else grad_score_rows.sum(0).to(keys.dtype)
    _grad_weights_kernel[(batch, triton.cdiv(slots, _SLOT_BLOCK))](
        values, *_strides(values), grad_read, _rows(grad_read), grad_weights, slots, size,
        SLOTS=_SLOT_BLOCK, FEATURES=_FEATURE_BLOCK,
    )  # fmt: skip
    _attend_backward_kernel[(batch, triton.cdiv(attention_size, _FEATURE_BLOCK))](
        keys, *_strides(keys), query, _rows(query), score, weights, _rows(weights), grad_weights, grad_keys,
        *_strides(grad_keys), grad_query, _rows(grad_query), grad_score_rows, slots, attention_size,
        SLOTS=_SLOT_BLOCK, FEATURES=_FEATURE_BLOCK,
    )  # fmt: skip
    return grad_query, None if accumulate else grad_score_rows.sum(0).to(keys.dtype)


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
    """`fast_recurrence.cell_update`: the two GEMMs, then `_cell_kernel`. Returns `(h_t, c_t, gates, r_t or None)`,
    written straight into `outputs` ("hidden", "cell", "gates", "relevance": tape and trace rows) where given;
    without `save` the gates and r_t are not kept (None)."""
    hidden_size = recurrent.size(1)
    batch = read.size(0)
    outputs = outputs or {}
    gates = torch.addmm(gate_input, read[:, :hidden_size], recurrent.t())  # (B, 4H), pre-activation
    deep = memory_gate is not None

    def out(name: str, *shape: int) -> torch.Tensor:
        given = outputs.get(name)
        return read.new_empty(*shape) if given is None else given

    hidden, cell = out("hidden", batch, hidden_size), out("cell", batch, hidden_size)
    activated = out("gates", batch, 4 * hidden_size) if save else gates
    relevance = out("relevance", batch, hidden_size) if deep and save else hidden
    memory_read = memory_read if deep else read  # without deep fusion: a placeholder the kernel never reads
    relevance_input = torch.addmm(memory_gate_input, memory_read[:, :hidden_size], memory_gate.t()) if deep else gates
    _cell_kernel[(batch, triton.cdiv(hidden_size, _FEATURE_BLOCK))](
        gates, read, _rows(read), relevance_input if deep else gates, memory_read, _rows(memory_read), hidden,
        _rows(hidden), cell, _rows(cell), activated, _rows(activated), relevance, _rows(relevance), hidden_size,
        DEEP=deep, SAVE=save, FEATURES=_FEATURE_BLOCK,
    )  # fmt: skip
    return hidden, cell, activated if save else None, relevance if deep and save else None


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
    """`fast_recurrence.cell_update_backward`: `_cell_backward_kernel`, then the GEMMs back through W and W_r.
    Returns `(∂gates (B, 4H), ∂read (B, 2H), ∂r pre-activation or None, ∂memory_read or None)`, written straight
    into `outputs` ("gates", "read", "relevance", "memory_read": rows of the gradient buffers) where given."""
    hidden_size = recurrent.size(1)
    batch = grad_hidden.size(0)
    deep = memory_gate is not None
    outputs = outputs or {}

    def out(name: str, *shape: int) -> torch.Tensor:
        given = outputs.get(name)
        return read.new_empty(*shape) if given is None else given

    grad_hidden = grad_hidden.contiguous()
    grad_gates, grad_read = out("gates", batch, 4 * hidden_size), out("read", batch, 2 * hidden_size)
    grad_relevance = out("relevance", batch, hidden_size) if deep else grad_read
    grad_memory_read = out("memory_read", batch, 2 * hidden_size) if deep else grad_read
    memory_read, relevance = (memory_read, relevance) if deep else (read, cell)  # placeholders, never read
    _cell_backward_kernel[(batch, triton.cdiv(hidden_size, _FEATURE_BLOCK))](
        grad_hidden, grad_cell, _rows(grad_cell), cell, _rows(cell), gates, _rows(gates), read, _rows(read),
        memory_read, _rows(memory_read), relevance, _rows(relevance), grad_gates, _rows(grad_gates), grad_read,
        _rows(grad_read), grad_relevance, _rows(grad_relevance), grad_memory_read, _rows(grad_memory_read),
        hidden_size, DEEP=deep, FEATURES=_FEATURE_BLOCK,
    )  # fmt: skip
    torch.mm(grad_gates, recurrent, out=grad_read[:, :hidden_size])  # ∂h̃ = Wᵀ ∂gates
    if deep:
        torch.mm(grad_relevance, memory_gate, out=grad_memory_read[:, :hidden_size])  # ∂γ̃ = W_rᵀ ∂r
    return grad_gates, grad_read, grad_relevance if deep else None, grad_memory_read if deep else None


STEP_FUNCTIONS = {
    "attend": attend,
    "attend_backward": attend_backward,
    "cell_update": cell_update,
    "cell_update_backward": cell_update_backward,
}
