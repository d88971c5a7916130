"""The LSTMN's recurrence as one Triton launch per layer and sequence, forward and backward (intra-attention).

`triton_steps.py` fuses each step's work into two or three kernels, launched T times forward and T times backward.
Here one program owns one batch row and the whole hidden width, and loops over the T steps inside the kernel: the
query, the attention over the tape, the cell and the tape write are one iteration of that loop. The row's tape
`[h_j; c_j]` and its keys W_h h_j live in global memory that only this program touches (on-chip memory is too small
for a 256-step tape), so no program ever waits for another: the only synchronisation is `tl.debug_barrier()`
between the phases of a step, which makes one phase's stores visible to the next phase's loads within the program.
Every program reads all the weights at every step through its one SM, so the step time grows with them: on an H200 it
beats the per-step loop up to about 100k recurrent weights (H = A = 128: 92 against 97 µs a training step; H = 64:
41 against 83) and loses beyond (the paper's H = 450: 982 against 161), `benchmarks/results/recurrence_paths.md`;
`fast_recurrence.persistent_applies` chooses it by that size.

Forward, per step t (slots 0 … t readable: slot 0 is h_0 = c_0 = 0, slot j ≥ 1 when token j − 1 is real), the
equations of `modeling_lstmn.py` (Cheng et al. 2016, §3):

    q_t   = W_x x_t + b + W_h̃ h̃_{t−1}                                    (eq. 4's query side; W_x x_t + b given)
    a_j   = vᵀ tanh(W_h h_j + q_t),   s = masked softmax(a)                (eq. 4–5)
    [h̃_t; c̃_t] = Σ_j s_j [h_j; c_j]                                      (eq. 6)
    [i; f; ĉ; o] = [σ; σ; tanh; σ](W x_t + b + W' h̃_t)                    (eq. 7; W x_t + b given)
    c_t = f ⊙ c̃_t + i ⊙ ĉ,   h_t = o ⊙ tanh c_t                           (eq. 8–9)
    slot t + 1 ← [h_t; c_t], its key ← W_h h_t;  h̃_{t−1} moves to h̃_t only at a real token

Backward, per step t in reverse, the hand-written backward of `fast_recurrence._recurrence_backward` (whose
derivation it mirrors line by line):

    ∂[h;c]_{t+1} += Σ_{u>t} s_u[t+1] ∂read_u                     (slot t + 1 was read by every later step)
    ∂h_t = ∂tape_h + W_hᵀ ∂k_{t+1};   ∂c = ∂tape_c + ∂h_t ⊙ o ⊙ (1 − tanh² c_t)
    ∂i = ∂c ⊙ ĉ ⊙ i(1−i), ∂f = ∂c ⊙ c̃_t ⊙ f(1−f), ∂ĉ = ∂c ⊙ i ⊙ (1−ĉ²), ∂o = ∂h_t ⊙ tanh c_t ⊙ o(1−o)
    ∂read_t = [W'ᵀ ∂gates + ∂carry·real_t;  ∂c ⊙ f],   ∂carry ← ∂carry·(1 − real_t)
    ∂s_j = [h_j; c_j]·∂read_t,  ∂a_j = s_j (∂s_j − Σ_i s_i ∂s_i)                 (softmax backward)
    ∂q_t = Σ_j ∂a_j v ⊙ (1 − tanh²),  ∂k_j += ∂a_j v ⊙ (1 − tanh²),  ∂v += Σ_j ∂a_j tanh(·)
    ∂carry += W_h̃ᵀ ∂q_t

The weight gradients are one GEMM each after the kernel (`lstmn_persistent_backward`), as on the per-step path.

Deviations: none in the maths. Inter-attention (shallow and deep fusion) stays on the per-step path
(`fast_recurrence.persistent_applies`). Everything accumulates in float32 whatever the inputs' dtype.

Shape legend: B batch, T steps, S = T + 1 tape slots, A attention size, H hidden size, D = 2H tape width.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from hf_attn.layers.triton_math import sigmoid, tanh

_SLOT_BLOCK = 32  # tape slots per inner tile
_FEATURE_BLOCK = 64  # features (A, H or D) per inner tile
_LOWEST = tl.constexpr(-3.4028234663852886e38)  # float32's most negative finite value, as `masked_softmax` fills


@triton.jit
def _readable(mask, row, steps, slot, in_range):
    # slot 0 (h_0) is always readable; slot j ≥ 1 when token j − 1 was real
    token = tl.load(mask + row * steps + slot - 1, mask=in_range & (slot > 0), other=0) != 0
    return in_range & ((slot == 0) | token)


@triton.jit
def _forward_kernel(
    queries, gate_inputs, mask, key, summary_weight, score, recurrent,
    tape, keys, intra, summary, step_queries, previous_summaries, reads, gates,
    query_scratch, score_scratch, read_scratch,
    steps, hidden_size, attention_size,
    SAVE: tl.constexpr, SLOTS: tl.constexpr, FEATURES: tl.constexpr,
):  # fmt: skip
    # One program, one batch row, all T steps (module docstring). Every tensor is contiguous.
    row = tl.program_id(0)
    width = 2 * hidden_size
    slots_total = steps + 1
    tape_row = tape + row * slots_total * width
    keys_row = keys + row * slots_total * attention_size
    summary_row = summary + row * hidden_size
    query_row = query_scratch + row * attention_size
    scores_row = score_scratch + row * slots_total
    read_row = read_scratch + row * width
    lanes = tl.arange(0, FEATURES)
    slot_lanes = tl.arange(0, SLOTS)
    for t in range(0, steps):
        step = row * steps + t
        real = tl.load(mask + step) != 0
        # q_t = W_x x_t + b + W_h̃ h̃_{t−1} (eq. 4), (A,)
        for a_start in range(0, attention_size, FEATURES):
            a = a_start + lanes
            in_a = a < attention_size
            total = tl.load(queries + step * attention_size + a, mask=in_a, other=0.0).to(tl.float32)
            for k_start in range(0, hidden_size, FEATURES):
                k = k_start + lanes
                in_k = k < hidden_size
                previous = tl.load(summary_row + k, mask=in_k, other=0.0)
                weight = tl.load(summary_weight + a[:, None] * hidden_size + k[None, :],
                                 mask=in_a[:, None] & in_k[None, :], other=0.0).to(tl.float32)  # fmt: skip
                total += tl.sum(weight * previous[None, :], axis=1)
            tl.store(query_row + a, total, mask=in_a)
            if SAVE:
                tl.store(step_queries + step * attention_size + a, total, mask=in_a)
        if SAVE:
            for k_start in range(0, hidden_size, FEATURES):
                k = k_start + lanes
                in_k = k < hidden_size
                tl.store(previous_summaries + step * hidden_size + k, tl.load(summary_row + k, mask=in_k), mask=in_k)
        tl.debug_barrier()
        # a_j = vᵀ tanh(W_h h_j + q_t) over the readable prefix j ≤ t (eq. 4), float32 scratch
        slots = t + 1
        for j_start in range(0, slots, SLOTS):
            j = j_start + slot_lanes
            in_j = j < slots
            total = tl.zeros([SLOTS], dtype=tl.float32)
            for a_start in range(0, attention_size, FEATURES):
                a = a_start + lanes
                in_a = a < attention_size
                cached = tl.load(keys_row + j[:, None] * attention_size + a[None, :],
                                 mask=in_j[:, None] & in_a[None, :], other=0.0).to(tl.float32)  # fmt: skip
                q = tl.load(query_row + a, mask=in_a, other=0.0)
                v = tl.load(score + a, mask=in_a, other=0.0).to(tl.float32)
                total += tl.sum(tanh(cached + q[None, :]) * v[None, :], axis=1)
            tl.store(scores_row + j, total, mask=in_j)
        tl.debug_barrier()
        # s = masked softmax(a) (eq. 5): its max and normaliser over the readable slots
        largest = tl.full([SLOTS], _LOWEST, dtype=tl.float32)
        for j_start in range(0, slots, SLOTS):
            j = j_start + slot_lanes
            in_j = j < slots
            readable = _readable(mask, row, steps, j, in_j)
            value = tl.load(scores_row + j, mask=in_j, other=0.0)
            largest = tl.maximum(largest, tl.where(readable, value, _LOWEST))
        top = tl.max(largest, axis=0)
        normaliser = tl.zeros([SLOTS], dtype=tl.float32)
        for j_start in range(0, slots, SLOTS):
            j = j_start + slot_lanes
            in_j = j < slots
            readable = _readable(mask, row, steps, j, in_j)
            value = tl.load(scores_row + j, mask=in_j, other=0.0)
            normaliser += tl.where(in_j, tl.exp(tl.where(readable, value, _LOWEST) - top), 0.0)
        normaliser_sum = tl.sum(normaliser, axis=0)
        # s_j into the maps (zero rows at padded tokens), then [h̃_t; c̃_t] = Σ_j s_j [h_j; c_j] (eq. 6)
        for j_start in range(0, slots, SLOTS):
            j = j_start + slot_lanes
            in_j = j < slots
            readable = _readable(mask, row, steps, j, in_j)
            value = tl.load(scores_row + j, mask=in_j, other=0.0)
            weight = tl.where(readable, tl.exp(value - top) / normaliser_sum, 0.0)
            tl.store(intra + step * steps + j, tl.where(real, weight, 0.0), mask=in_j)
        for d_start in range(0, width, FEATURES):
            d = d_start + lanes
            in_d = d < width
            total = tl.zeros([FEATURES], dtype=tl.float32)
            for j_start in range(0, slots, SLOTS):
                j = j_start + slot_lanes
                in_j = j < slots
                readable = _readable(mask, row, steps, j, in_j)
                value = tl.load(scores_row + j, mask=in_j, other=0.0)
                weight = tl.where(readable, tl.exp(value - top) / normaliser_sum, 0.0)
                values = tl.load(tape_row + j[:, None] * width + d[None, :],
                                 mask=in_j[:, None] & in_d[None, :], other=0.0).to(tl.float32)  # fmt: skip
                total += tl.sum(weight[:, None] * values, axis=0)
            tl.store(read_row + d, total, mask=in_d)
            if SAVE:
                tl.store(reads + step * width + d, total, mask=in_d)
        tl.debug_barrier()
        # gates = W x_t + b + W' h̃_t (eq. 7), the cell (eq. 8) and h_t (eq. 9), into slot t + 1
        for j_start in range(0, hidden_size, FEATURES):
            j = j_start + lanes
            in_j = j < hidden_size
            gate_row = gate_inputs + step * 4 * hidden_size + j
            input_gate = tl.load(gate_row, mask=in_j, other=0.0).to(tl.float32)
            forget_gate = tl.load(gate_row + hidden_size, mask=in_j, other=0.0).to(tl.float32)
            candidate = tl.load(gate_row + 2 * hidden_size, mask=in_j, other=0.0).to(tl.float32)
            output_gate = tl.load(gate_row + 3 * hidden_size, mask=in_j, other=0.0).to(tl.float32)
            for k_start in range(0, hidden_size, FEATURES):
                k = k_start + lanes
                in_k = k < hidden_size
                read = tl.load(read_row + k, mask=in_k, other=0.0)[None, :]
                tile = in_j[:, None] & in_k[None, :]
                weight = recurrent + j[:, None] * hidden_size + k[None, :]
                input_gate += tl.sum(tl.load(weight, mask=tile, other=0.0).to(tl.float32) * read, axis=1)
                forget_gate += tl.sum(
                    tl.load(weight + hidden_size * hidden_size, mask=tile, other=0.0).to(tl.float32) * read, axis=1
                )
                candidate += tl.sum(
                    tl.load(weight + 2 * hidden_size * hidden_size, mask=tile, other=0.0).to(tl.float32) * read,
                    axis=1,
                )
                output_gate += tl.sum(
                    tl.load(weight + 3 * hidden_size * hidden_size, mask=tile, other=0.0).to(tl.float32) * read,
                    axis=1,
                )
            input_gate, forget_gate = sigmoid(input_gate), sigmoid(forget_gate)
            candidate, output_gate = tanh(candidate), sigmoid(output_gate)
            summary_cell = tl.load(read_row + hidden_size + j, mask=in_j, other=0.0)
            cell = forget_gate * summary_cell + input_gate * candidate
            written = tape_row + (t + 1) * width + j
            tl.store(written, output_gate * tanh(cell), mask=in_j)
            tl.store(written + hidden_size, cell, mask=in_j)
            if SAVE:
                activated = gates + step * 4 * hidden_size + j
                tl.store(activated, input_gate, mask=in_j)
                tl.store(activated + hidden_size, forget_gate, mask=in_j)
                tl.store(activated + 2 * hidden_size, candidate, mask=in_j)
                tl.store(activated + 3 * hidden_size, output_gate, mask=in_j)
        tl.debug_barrier()
        # the new slot's key W_h h_t, computed once (the cache), and h̃ carried to the next query at a real token
        for a_start in range(0, attention_size, FEATURES):
            a = a_start + lanes
            in_a = a < attention_size
            total = tl.zeros([FEATURES], dtype=tl.float32)
            for k_start in range(0, hidden_size, FEATURES):
                k = k_start + lanes
                in_k = k < hidden_size
                hidden = tl.load(tape_row + (t + 1) * width + k, mask=in_k, other=0.0).to(tl.float32)
                weight = tl.load(key + a[:, None] * hidden_size + k[None, :],
                                 mask=in_a[:, None] & in_k[None, :], other=0.0).to(tl.float32)  # fmt: skip
                total += tl.sum(weight * hidden[None, :], axis=1)
            tl.store(keys_row + (t + 1) * attention_size + a, total, mask=in_a)
        for k_start in range(0, hidden_size, FEATURES):
            k = k_start + lanes
            in_k = k < hidden_size
            carried = tl.where(real, tl.load(read_row + k, mask=in_k, other=0.0), tl.load(summary_row + k, mask=in_k))
            tl.store(summary_row + k, carried, mask=in_k)
        tl.debug_barrier()


@triton.jit
def _backward_kernel(
    mask, key, summary_weight, score, recurrent,
    tape, keys, intra, step_queries, reads, gates,
    grad_tape, grad_keys, grad_reads, grad_gate_inputs, grad_queries, grad_score_rows, grad_carry, weight_scratch,
    steps, hidden_size, attention_size,
    SLOTS: tl.constexpr, FEATURES: tl.constexpr,
):  # fmt: skip
    # One program, one batch row, the T steps in reverse (module docstring). The gradient buffers are float32 and
    # contiguous: grad_tape (B, S, D) seeded with the outputs' gradients, grad_keys (B, S, A), grad_score_rows (B, A)
    # and grad_carry (B, H) zero.
    row = tl.program_id(0)
    width = 2 * hidden_size
    slots_total = steps + 1
    tape_row = tape + row * slots_total * width
    keys_row = keys + row * slots_total * attention_size
    grad_tape_row = grad_tape + row * slots_total * width
    grad_keys_row = grad_keys + row * slots_total * attention_size
    carry_row = grad_carry + row * hidden_size
    weights_row = weight_scratch + row * slots_total
    lanes = tl.arange(0, FEATURES)
    slot_lanes = tl.arange(0, SLOTS)
    for back in range(0, steps):
        t = steps - 1 - back
        step = row * steps + t
        slot = t + 1
        real = tl.load(mask + step) != 0
        # slot t + 1 was read by every later step u with weight s_u[t + 1]: ∂[h; c]_{t+1} += Σ_u s_u[t+1] ∂read_u
        for d_start in range(0, width, FEATURES):
            d = d_start + lanes
            in_d = d < width
            total = tl.load(grad_tape_row + slot * width + d, mask=in_d, other=0.0)
            for u_start in range(slot, steps, SLOTS):
                u = u_start + slot_lanes
                in_u = u < steps
                weight = tl.load(intra + (row * steps + u) * steps + slot, mask=in_u, other=0.0).to(tl.float32)
                later = tl.load(grad_reads + (row * steps + u[:, None]) * width + d[None, :],
                                mask=in_u[:, None] & in_d[None, :], other=0.0)  # fmt: skip
                total += tl.sum(weight[:, None] * later, axis=0)
            tl.store(grad_tape_row + slot * width + d, total, mask=in_d)
        tl.debug_barrier()
        # ∂h_t = ∂tape_h + W_hᵀ ∂k_{t+1}, then back through the cell (eq. 9, 8, 7)
        for j_start in range(0, hidden_size, FEATURES):
            j = j_start + lanes
            in_j = j < hidden_size
            grad_hidden = tl.load(grad_tape_row + slot * width + j, mask=in_j, other=0.0)
            for a_start in range(0, attention_size, FEATURES):
                a = a_start + lanes
                in_a = a < attention_size
                grad_key = tl.load(grad_keys_row + slot * attention_size + a, mask=in_a, other=0.0)
                weight = tl.load(key + a[:, None] * hidden_size + j[None, :],
                                 mask=in_a[:, None] & in_j[None, :], other=0.0).to(tl.float32)  # fmt: skip
                grad_hidden += tl.sum(weight * grad_key[:, None], axis=0)
            activated = gates + step * 4 * hidden_size + j
            input_gate = tl.load(activated, mask=in_j, other=0.0).to(tl.float32)
            forget_gate = tl.load(activated + hidden_size, mask=in_j, other=0.0).to(tl.float32)
            candidate = tl.load(activated + 2 * hidden_size, mask=in_j, other=0.0).to(tl.float32)
            output_gate = tl.load(activated + 3 * hidden_size, mask=in_j, other=0.0).to(tl.float32)
            tanh_cell = tanh(tl.load(tape_row + slot * width + hidden_size + j, mask=in_j, other=0.0).to(tl.float32))
            grad_cell = tl.load(grad_tape_row + slot * width + hidden_size + j, mask=in_j, other=0.0)
            grad_cell += grad_hidden * output_gate * (1.0 - tanh_cell * tanh_cell)
            summary_cell = tl.load(reads + step * width + hidden_size + j, mask=in_j, other=0.0).to(tl.float32)
            grad_row = grad_gate_inputs + step * 4 * hidden_size + j
            tl.store(grad_row, grad_cell * candidate * input_gate * (1.0 - input_gate), mask=in_j)
            tl.store(grad_row + hidden_size, grad_cell * summary_cell * forget_gate * (1.0 - forget_gate), mask=in_j)
            tl.store(grad_row + 2 * hidden_size, grad_cell * input_gate * (1.0 - candidate * candidate), mask=in_j)
            tl.store(grad_row + 3 * hidden_size, grad_hidden * tanh_cell * output_gate * (1.0 - output_gate),
                     mask=in_j)  # fmt: skip
            tl.store(grad_reads + step * width + hidden_size + j, grad_cell * forget_gate, mask=in_j)
        tl.debug_barrier()
        # ∂h̃_t = W'ᵀ ∂gates, plus the carry from the next real step's query; the carry stops at a real token
        for k_start in range(0, hidden_size, FEATURES):
            k = k_start + lanes
            in_k = k < hidden_size
            total = tl.zeros([FEATURES], dtype=tl.float32)
            for g_start in range(0, 4 * hidden_size, FEATURES):
                g = g_start + lanes
                in_g = g < 4 * hidden_size
                grad_gate = tl.load(grad_gate_inputs + step * 4 * hidden_size + g, mask=in_g, other=0.0)
                weight = tl.load(recurrent + g[:, None] * hidden_size + k[None, :],
                                 mask=in_g[:, None] & in_k[None, :], other=0.0).to(tl.float32)  # fmt: skip
                total += tl.sum(weight * grad_gate[:, None], axis=0)
            carried = tl.load(carry_row + k, mask=in_k, other=0.0)
            tl.store(grad_reads + step * width + k, total + tl.where(real, carried, 0.0), mask=in_k)
            tl.store(carry_row + k, tl.where(real, 0.0, carried), mask=in_k)
        tl.debug_barrier()
        # attention backward (eq. 4–6): ∂s_j = [h_j; c_j]·∂read_t over the readable prefix j ≤ t
        for j_start in range(0, slot, SLOTS):
            j = j_start + slot_lanes
            in_j = j < slot
            total = tl.zeros([SLOTS], dtype=tl.float32)
            for d_start in range(0, width, FEATURES):
                d = d_start + lanes
                in_d = d < width
                values = tl.load(tape_row + j[:, None] * width + d[None, :],
                                 mask=in_j[:, None] & in_d[None, :], other=0.0).to(tl.float32)  # fmt: skip
                grad_read = tl.load(grad_reads + step * width + d, mask=in_d, other=0.0)
                total += tl.sum(values * grad_read[None, :], axis=1)
            tl.store(weights_row + j, total, mask=in_j)
        tl.debug_barrier()
        mean = tl.zeros([SLOTS], dtype=tl.float32)
        for j_start in range(0, slot, SLOTS):
            j = j_start + slot_lanes
            in_j = j < slot
            weight = tl.load(intra + step * steps + j, mask=in_j, other=0.0).to(tl.float32)
            mean += weight * tl.load(weights_row + j, mask=in_j, other=0.0)
        expected = tl.sum(mean, axis=0)
        for a_start in range(0, attention_size, FEATURES):
            a = a_start + lanes
            in_a = a < attention_size
            q = tl.load(step_queries + step * attention_size + a, mask=in_a, other=0.0).to(tl.float32)
            v = tl.load(score + a, mask=in_a, other=0.0).to(tl.float32)
            total_query = tl.zeros([FEATURES], dtype=tl.float32)
            total_score = tl.zeros([FEATURES], dtype=tl.float32)
            for j_start in range(0, slot, SLOTS):
                j = j_start + slot_lanes
                in_j = j < slot
                weight = tl.load(intra + step * steps + j, mask=in_j, other=0.0).to(tl.float32)
                grad_score = weight * (tl.load(weights_row + j, mask=in_j, other=0.0) - expected)  # ∂a_j
                tile = in_j[:, None] & in_a[None, :]
                features = tanh(
                    tl.load(keys_row + j[:, None] * attention_size + a[None, :], mask=tile, other=0.0).to(tl.float32)
                    + q[None, :]
                )
                total_score += tl.sum(grad_score[:, None] * features, axis=0)
                grad_features = grad_score[:, None] * (v[None, :] * (1.0 - features * features))
                total_query += tl.sum(grad_features, axis=0)
                key_gradients = grad_keys_row + j[:, None] * attention_size + a[None, :]
                tl.store(key_gradients, tl.load(key_gradients, mask=tile, other=0.0) + grad_features, mask=tile)
            tl.store(grad_queries + step * attention_size + a, total_query, mask=in_a)
            score_rows = grad_score_rows + row * attention_size + a
            tl.store(score_rows, tl.load(score_rows, mask=in_a, other=0.0) + total_score, mask=in_a)
        tl.debug_barrier()
        # ∂carry += W_h̃ᵀ ∂q_t: h̃_{t−1} fed this step's query
        for k_start in range(0, hidden_size, FEATURES):
            k = k_start + lanes
            in_k = k < hidden_size
            total = tl.load(carry_row + k, mask=in_k, other=0.0)
            for a_start in range(0, attention_size, FEATURES):
                a = a_start + lanes
                in_a = a < attention_size
                grad_query = tl.load(grad_queries + step * attention_size + a, mask=in_a, other=0.0)
                weight = tl.load(summary_weight + a[:, None] * hidden_size + k[None, :],
                                 mask=in_a[:, None] & in_k[None, :], other=0.0).to(tl.float32)  # fmt: skip
                total += tl.sum(weight * grad_query[:, None], axis=0)
            tl.store(carry_row + k, total, mask=in_k)
        tl.debug_barrier()


def _warps(hidden_size: int) -> int:
    return 8 if hidden_size >= 256 else 4


def lstmn_persistent_forward(
    queries: torch.Tensor,
    gate_inputs: torch.Tensor,
    mask: torch.Tensor,
    key: torch.Tensor,
    summary_weight: torch.Tensor,
    score: torch.Tensor,
    recurrent: torch.Tensor,
    save: bool,
) -> dict[str, torch.Tensor | None]:
    """One intra-attention LSTMN layer over T steps from the empty memory, in one launch.

    Args: queries `(B, T, A)` (W_x x_t + b), gate_inputs `(B, T, 4H)` (W x_t + b), mask `(B, T)`, the weights W_h
    `(A, H)`, W_h̃ `(A, H)`, v `(A,)`, W' `(4H, H)`; `save`: also record the trace the backward reads.
    Returns tape `(B, S, 2H)`, keys `(B, S, A)`, intra `(B, T, T)` (zero rows at padded tokens), the final summary
    `(B, H)`, and with `save` the trace: step_queries `(B, T, A)`, previous_summaries `(B, T, H)`, reads
    `(B, T, 2H)`, gates `(B, T, 4H)` (after their nonlinearities); all in `queries`' dtype.
    """
    batch, steps, attention_size = queries.shape
    hidden_size = recurrent.size(1)
    like = queries
    queries, gate_inputs = queries.contiguous(), gate_inputs.contiguous()
    key, summary_weight, score, recurrent = (value.contiguous() for value in (key, summary_weight, score, recurrent))
    mask = mask.to(torch.uint8).contiguous()
    tape = like.new_zeros(batch, steps + 1, 2 * hidden_size)
    keys = like.new_zeros(batch, steps + 1, attention_size)
    intra = like.new_zeros(batch, steps, steps)
    summary = like.new_zeros(batch, hidden_size, dtype=torch.float32)

    def trace(*shape: int) -> torch.Tensor:
        return like.new_empty(*shape) if save else like.new_empty(1)

    step_queries = trace(batch, steps, attention_size)
    previous_summaries = trace(batch, steps, hidden_size)
    reads = trace(batch, steps, 2 * hidden_size)
    gates = trace(batch, steps, 4 * hidden_size)
    # per-row scratch the phases of a step pass on: q_t, the scores a_j, [h̃_t; c̃_t] (float32)
    query_scratch, score_scratch, read_scratch = (
        like.new_empty(batch, size, dtype=torch.float32) for size in (attention_size, steps + 1, 2 * hidden_size)
    )
    if batch and steps:
        _forward_kernel[(batch,)](
            queries, gate_inputs, mask, key, summary_weight, score, recurrent,
            tape, keys, intra, summary, step_queries, previous_summaries, reads, gates,
            query_scratch, score_scratch, read_scratch,
            steps, hidden_size, attention_size,
            SAVE=save, SLOTS=_SLOT_BLOCK, FEATURES=_FEATURE_BLOCK, num_warps=_warps(hidden_size),
        )  # fmt: skip
    return {
        "tape": tape,
        "keys": keys,
        "intra": intra,
        "summary": summary.to(like.dtype),
        "step_queries": step_queries if save else None,
        "previous_summaries": previous_summaries if save else None,
        "reads": reads if save else None,
        "gates": gates if save else None,
    }


def lstmn_persistent_backward(
    grad_hidden: torch.Tensor,
    grad_cells: torch.Tensor,
    mask: torch.Tensor,
    key: torch.Tensor,
    summary_weight: torch.Tensor,
    score: torch.Tensor,
    recurrent: torch.Tensor,
    tape: torch.Tensor,
    keys: torch.Tensor,
    intra: torch.Tensor,
    step_queries: torch.Tensor,
    previous_summaries: torch.Tensor,
    reads: torch.Tensor,
    gates: torch.Tensor,
) -> tuple[torch.Tensor, ...]:
    """The backward of `lstmn_persistent_forward` for ∂L/∂h, ∂L/∂c `(B, T, H)` (the outputs' gradients, zeroed at
    padded tokens here): one launch for the T steps, then one GEMM per weight.

    Returns `(∂queries (B, T, A), ∂gate_inputs (B, T, 4H), ∂W_h (A, H), ∂W_h̃ (A, H), ∂v (A,), ∂W' (4H, H))`.
    """
    batch, steps, attention_size = step_queries.shape
    hidden_size = recurrent.size(1)
    real = mask[..., None].to(torch.float32)
    grad_tape = tape.new_zeros(tape.shape, dtype=torch.float32)
    grad_tape[:, 1:, :hidden_size] = grad_hidden * real
    grad_tape[:, 1:, hidden_size:] = grad_cells * real
    float_zeros = [keys.shape, (batch, attention_size), (batch, hidden_size)]
    grad_keys, grad_score_rows, grad_carry = (tape.new_zeros(shape, dtype=torch.float32) for shape in float_zeros)
    grad_reads = tape.new_empty(batch, steps, 2 * hidden_size, dtype=torch.float32)
    grad_gate_inputs = tape.new_empty(batch, steps, 4 * hidden_size, dtype=torch.float32)
    grad_queries = tape.new_empty(batch, steps, attention_size, dtype=torch.float32)
    weight_scratch = tape.new_empty(batch, steps + 1, dtype=torch.float32)
    contiguous = [value.contiguous() for value in (key, summary_weight, score, recurrent, tape, keys, intra)]
    if batch and steps:
        _backward_kernel[(batch,)](
            mask.to(torch.uint8).contiguous(), *contiguous, step_queries.contiguous(), reads.contiguous(),
            gates.contiguous(), grad_tape, grad_keys, grad_reads, grad_gate_inputs, grad_queries, grad_score_rows,
            grad_carry, weight_scratch, steps, hidden_size, attention_size,
            SLOTS=_SLOT_BLOCK, FEATURES=_FEATURE_BLOCK, num_warps=_warps(hidden_size),
        )  # fmt: skip
    dtype = tape.dtype
    grad_queries, grad_gate_inputs = grad_queries.to(dtype), grad_gate_inputs.to(dtype)

    def flat(tensor: torch.Tensor) -> torch.Tensor:
        return tensor.reshape(-1, tensor.size(-1))

    grad_key = (flat(grad_keys[:, 1:]).t() @ flat(tape[:, 1:, :hidden_size].float())).to(dtype)
    grad_summary = flat(grad_queries).t() @ flat(previous_summaries)
    grad_recurrent = flat(grad_gate_inputs).t() @ flat(reads[..., :hidden_size])
    return grad_queries, grad_gate_inputs, grad_key, grad_summary, grad_score_rows.sum(0).to(dtype), grad_recurrent
