"""The masked multi-dimensional block self-attention of `block_attention.py` as fused Triton kernels: the scores
`(G, L, L, H)` never reach global memory.

The maths are those of `block_attention.py` (Shen et al., ICLR 2018, §3.1), for query i, key j and feature k:

    u_ijk = (key_jk + query_ik + bias_k) / c,   s_ijk = c·tanh(u_ijk)
    P_ijk = exp(s_ijk − m_ik) / l_ik over the allowed keys, 0 elsewhere
    m_ik = max_j s_ijk,   l_ik = Σ_j exp(s_ijk − m_ik)   (over the allowed keys)
    out_ik = Σ_j P_ijk · value_jk

Forward (`_forward_kernel`): one program per (sequence g, tile of queries, tile of features). It walks the keys
tile by tile, only those its direction allows (forward: j < i; backward: j > i), and keeps per (i, k) the running
maximum m, the running sum l and the running Σ_j exp(s − m)·value: the online softmax of flash attention, here
feature-wise. It writes out, m and l (O(G·L·H): what the backward pass reads) and, when asked, the feature-averaged
maps P̄_ij = (1/H) Σ_k P_ijk in a second walk over the keys (each feature tile adds its share).

Backward, with g = ∂loss/∂out (the same derivation as `block_attention.py`'s docstring):

    ∂value_j = Σ_i P_ij ⊙ g_i
    ∂s_ij    = P_ij ⊙ g_i ⊙ (value_j − out_i)
    ∂x_ij    = ∂s_ij ⊙ (1 − tanh²(u_ij))          (x = key + query + bias: ∂s/∂x = 1 − tanh²(u))
    ∂query_i = Σ_j ∂x_ij,  ∂key_j = Σ_i ∂x_ij,  ∂bias = Σ_ij ∂x_ij = Σ_i ∂query_i

`_query_grad_kernel` sums over the keys for a tile of queries (∂query); `_key_value_grad_kernel` sums over the
queries for a tile of keys (∂key, ∂value). Both recompute P from the saved m and l; ∂bias is ∂query summed.

A query without an allowed key (a padded one, the first of a forward block) has l = 0: its P, out and gradients are
0, as in the PyTorch path. Everything is computed in float32 (the callers upcast, as `block_attention.py` does).

Shape legend: G sequences (blocks), L positions per sequence (queries i, keys j), H features.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from hf_attn.layers.triton_math import tanh

BLOCK_QUERIES = 16
BLOCK_KEYS = 16
BLOCK_FEATURES = 16


@triton.jit
def _scores(k, q, b, scale):
    """s = c·tanh((key + query + bias)/c) and the tanh, `(BLOCK_I, BLOCK_J, BLOCK_H)` from keys `(BLOCK_J, BLOCK_H)`
    and queries `(BLOCK_I, BLOCK_H)`."""
    squashed = tanh((k[None, :, :] + q[:, None, :] + b[None, None, :]) / scale)
    return scale * squashed, squashed


@triton.jit
def _allowed(rows, cols, row_real, col_real, FORWARD: tl.constexpr):
    """allowed(i, j) ∧ mask_i ∧ mask_j, `(BLOCK_I, BLOCK_J)`: forward j < i, backward j > i."""
    direction = cols[None, :] < rows[:, None] if FORWARD else cols[None, :] > rows[:, None]
    return direction & row_real[:, None] & col_real[None, :]


@triton.jit
def _key_range(first_row, length, FORWARD: tl.constexpr, BLOCK_I: tl.constexpr):
    """The keys a tile of queries starting at `first_row` may read: [0, last row) forward, (first row, L) backward."""
    if FORWARD:
        return 0, tl.minimum(first_row + BLOCK_I, length)
    else:
        return first_row, length


@triton.jit
def _tile(positions, feats, length, features):
    """The offsets of a (positions × features) tile in one `(L, H)` sequence, and which of them lie inside it."""
    offsets = positions[:, None] * features + feats[None, :]
    return offsets, (positions < length)[:, None] & (feats < features)[None, :]


@triton.jit
def _real(mask, group, length, positions):
    """mask_g at `positions` (a position past L is not real)."""
    return tl.load(mask + group * length + positions, mask=positions < length, other=0) != 0


@triton.jit
def _inverse(total):
    """1 / l, and 0 where l = 0 (a query without an allowed key: P = 0, not NaN)."""
    return tl.where(total > 0, 1.0 / tl.where(total > 0, total, 1.0), 0.0)


@triton.jit
def _forward_kernel(
    keys, queries, bias, values, mask, out, row_max, row_sum, maps,
    length, features, scale, inverse_features,
    FORWARD: tl.constexpr, WITH_MAPS: tl.constexpr,
    BLOCK_I: tl.constexpr, BLOCK_J: tl.constexpr, BLOCK_H: tl.constexpr,
):  # fmt: skip
    group, tile_i, tile_h = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    rows = tile_i * BLOCK_I + tl.arange(0, BLOCK_I)
    feats = tile_h * BLOCK_H + tl.arange(0, BLOCK_H)
    base = group * length * features
    tile, tile_in = _tile(rows, feats, length, features)
    q = tl.load(queries + base + tile, mask=tile_in, other=0.0)
    b = tl.load(bias + feats, mask=feats < features, other=0.0)
    row_real = _real(mask, group, length, rows)

    m = tl.full((BLOCK_I, BLOCK_H), float("-inf"), tl.float32)
    total = tl.zeros((BLOCK_I, BLOCK_H), tl.float32)
    weighted = tl.zeros((BLOCK_I, BLOCK_H), tl.float32)
    start, stop = _key_range(tile_i * BLOCK_I, length, FORWARD, BLOCK_I)
    for first in range((start // BLOCK_J) * BLOCK_J, stop, BLOCK_J):
        cols = first + tl.arange(0, BLOCK_J)
        key_tile, key_in = _tile(cols, feats, length, features)
        k = tl.load(keys + base + key_tile, mask=key_in, other=0.0)
        v = tl.load(values + base + key_tile, mask=key_in, other=0.0)
        ok = _allowed(rows, cols, row_real, _real(mask, group, length, cols), FORWARD)[:, :, None]
        s, _ = _scores(k, q, b, scale)
        s = tl.where(ok, s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        shift = tl.where(m_new == float("-inf"), 0.0, m_new)  # no allowed key yet: nothing to shift
        rescale = tl.exp(m - shift)
        p = tl.where(ok, tl.exp(s - shift[:, None, :]), 0.0)
        total = total * rescale + tl.sum(p, axis=1)
        weighted = weighted * rescale + tl.sum(p * v[None, :, :], axis=1)
        m = m_new
    shift = tl.where(m == float("-inf"), 0.0, m)
    inverse = _inverse(total)
    tl.store(out + base + tile, weighted * inverse, mask=tile_in)
    tl.store(row_max + base + tile, shift, mask=tile_in)
    tl.store(row_sum + base + tile, total, mask=tile_in)

    if WITH_MAPS:  # P̄_ij: this tile's features' share, (1/H) Σ_k P_ijk
        for first in range((start // BLOCK_J) * BLOCK_J, stop, BLOCK_J):
            cols = first + tl.arange(0, BLOCK_J)
            key_tile, key_in = _tile(cols, feats, length, features)
            k = tl.load(keys + base + key_tile, mask=key_in, other=0.0)
            ok = _allowed(rows, cols, row_real, _real(mask, group, length, cols), FORWARD)[:, :, None]
            p, _ = _probabilities(k, q, b, scale, ok & (feats < features)[None, None, :], shift, inverse)
            where = group * length * length + rows[:, None] * length + cols[None, :]
            tl.atomic_add(maps + where, tl.sum(p, axis=2) * inverse_features,
                          mask=(rows < length)[:, None] & (cols < length)[None, :])  # fmt: skip


@triton.jit
def _probabilities(k, q, b, scale, ok, shift, inverse):
    """P `(BLOCK_I, BLOCK_J, BLOCK_H)` recomputed from the saved max (`shift`) and 1/sum, with the tanh."""
    s, squashed = _scores(k, q, b, scale)
    return tl.where(ok, tl.exp(s - shift[:, None, :]) * inverse[:, None, :], 0.0), squashed


@triton.jit
def _query_side(queries, out, grad_out, row_max, row_sum, base, tile, tile_in):
    """A tile of queries with what the backward pass reads of them: query, out, ∂out, the softmax's max and 1/sum."""
    q = tl.load(queries + base + tile, mask=tile_in, other=0.0)
    o = tl.load(out + base + tile, mask=tile_in, other=0.0)
    g = tl.load(grad_out + base + tile, mask=tile_in, other=0.0)
    shift = tl.load(row_max + base + tile, mask=tile_in, other=0.0)
    inverse = _inverse(tl.load(row_sum + base + tile, mask=tile_in, other=0.0))
    return q, o, g, shift, inverse


@triton.jit
def _query_grad_kernel(
    keys, queries, bias, values, mask, out, row_max, row_sum, grad_out, grad_queries,
    length, features, scale,
    FORWARD: tl.constexpr, BLOCK_I: tl.constexpr, BLOCK_J: tl.constexpr, BLOCK_H: tl.constexpr,
):  # fmt: skip
    group, tile_i, tile_h = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    rows = tile_i * BLOCK_I + tl.arange(0, BLOCK_I)
    feats = tile_h * BLOCK_H + tl.arange(0, BLOCK_H)
    base = group * length * features
    tile, tile_in = _tile(rows, feats, length, features)
    q, o, g, shift, inverse = _query_side(queries, out, grad_out, row_max, row_sum, base, tile, tile_in)
    b = tl.load(bias + feats, mask=feats < features, other=0.0)
    row_real = _real(mask, group, length, rows)

    grad_q = tl.zeros((BLOCK_I, BLOCK_H), tl.float32)
    start, stop = _key_range(tile_i * BLOCK_I, length, FORWARD, BLOCK_I)
    for first in range((start // BLOCK_J) * BLOCK_J, stop, BLOCK_J):
        cols = first + tl.arange(0, BLOCK_J)
        key_tile, key_in = _tile(cols, feats, length, features)
        k = tl.load(keys + base + key_tile, mask=key_in, other=0.0)
        v = tl.load(values + base + key_tile, mask=key_in, other=0.0)
        ok = _allowed(rows, cols, row_real, _real(mask, group, length, cols), FORWARD)[:, :, None]
        p, squashed = _probabilities(k, q, b, scale, ok, shift, inverse)
        grad_s = p * g[:, None, :] * (v[None, :, :] - o[:, None, :])  # ∂s_ij = P ⊙ g_i ⊙ (value_j − out_i)
        grad_q += tl.sum(grad_s * (1.0 - squashed * squashed), axis=1)  # ∂query_i = Σ_j ∂x_ij
    tl.store(grad_queries + base + tile, grad_q, mask=tile_in)


@triton.jit
def _key_value_grad_kernel(
    keys, queries, bias, values, mask, out, row_max, row_sum, grad_out, grad_keys, grad_values,
    length, features, scale,
    FORWARD: tl.constexpr, BLOCK_I: tl.constexpr, BLOCK_J: tl.constexpr, BLOCK_H: tl.constexpr,
):  # fmt: skip
    group, tile_j, tile_h = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    cols = tile_j * BLOCK_J + tl.arange(0, BLOCK_J)
    feats = tile_h * BLOCK_H + tl.arange(0, BLOCK_H)
    base = group * length * features
    key_tile, key_in = _tile(cols, feats, length, features)
    k = tl.load(keys + base + key_tile, mask=key_in, other=0.0)
    v = tl.load(values + base + key_tile, mask=key_in, other=0.0)
    b = tl.load(bias + feats, mask=feats < features, other=0.0)
    col_real = _real(mask, group, length, cols)

    grad_k = tl.zeros((BLOCK_J, BLOCK_H), tl.float32)
    grad_v = tl.zeros((BLOCK_J, BLOCK_H), tl.float32)
    # The queries that may read these keys: i > j forward, i < j backward.
    if FORWARD:
        start, stop = tile_j * BLOCK_J, length
    else:
        start, stop = 0, tl.minimum(tile_j * BLOCK_J + BLOCK_J, length)
    for first in range((start // BLOCK_I) * BLOCK_I, stop, BLOCK_I):
        rows = first + tl.arange(0, BLOCK_I)
        tile, tile_in = _tile(rows, feats, length, features)
        q, o, g, shift, inverse = _query_side(queries, out, grad_out, row_max, row_sum, base, tile, tile_in)
        ok = _allowed(rows, cols, _real(mask, group, length, rows), col_real, FORWARD)[:, :, None]
        p, squashed = _probabilities(k, q, b, scale, ok, shift, inverse)
        weighted = p * g[:, None, :]  # P_ij ⊙ g_i
        grad_v += tl.sum(weighted, axis=0)  # ∂value_j = Σ_i P_ij ⊙ g_i
        grad_s = weighted * (v[None, :, :] - o[:, None, :])
        grad_k += tl.sum(grad_s * (1.0 - squashed * squashed), axis=0)  # ∂key_j = Σ_i ∂x_ij
    tl.store(grad_keys + base + key_tile, grad_k, mask=key_in)
    tl.store(grad_values + base + key_tile, grad_v, mask=key_in)


def _grid(groups: int, length: int, features: int, block: int) -> tuple[int, int, int]:
    return groups, triton.cdiv(length, block), triton.cdiv(features, BLOCK_FEATURES)


def attention_forward(
    keys: torch.Tensor, queries: torch.Tensor, bias: torch.Tensor, values: torch.Tensor, mask: torch.Tensor,
    forward: bool, scale: float, with_maps: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:  # fmt: skip
    """`(out (G, L, H), m, l (G, L, H): the softmax's max and sum per query and feature, maps (G, L, L) or empty)`;
    float32 contiguous inputs, `mask` `(G, L)`."""
    groups, length, features = values.shape
    out = torch.empty_like(values)
    row_max, row_sum = torch.empty_like(values), torch.empty_like(values)
    maps = values.new_zeros((groups, length, length) if with_maps else (0,))
    _forward_kernel[_grid(groups, length, features, BLOCK_QUERIES)](
        keys, queries, bias, values, mask.to(torch.int8), out, row_max, row_sum, maps,
        length, features, float(scale), 1.0 / features,
        FORWARD=forward, WITH_MAPS=with_maps, BLOCK_I=BLOCK_QUERIES, BLOCK_J=BLOCK_KEYS, BLOCK_H=BLOCK_FEATURES,
    )  # fmt: skip
    return out, row_max, row_sum, maps


def attention_backward(
    keys: torch.Tensor, queries: torch.Tensor, bias: torch.Tensor, values: torch.Tensor, mask: torch.Tensor,
    out: torch.Tensor, row_max: torch.Tensor, row_sum: torch.Tensor, grad_out: torch.Tensor, forward: bool,
    scale: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:  # fmt: skip
    """`(∂keys, ∂queries, ∂bias, ∂values)` from the forward's out, m and l and ∂out (module docstring)."""
    groups, length, features = values.shape
    mask = mask.to(torch.int8)
    grad_out = grad_out.contiguous()
    grad_queries = torch.empty_like(queries)
    grad_keys, grad_values = torch.empty_like(keys), torch.empty_like(values)
    common = (length, features, float(scale))
    blocks = {"BLOCK_I": BLOCK_QUERIES, "BLOCK_J": BLOCK_KEYS, "BLOCK_H": BLOCK_FEATURES}
    _query_grad_kernel[_grid(groups, length, features, BLOCK_QUERIES)](
        keys, queries, bias, values, mask, out, row_max, row_sum, grad_out, grad_queries, *common,
        FORWARD=forward, **blocks,
    )  # fmt: skip
    _key_value_grad_kernel[_grid(groups, length, features, BLOCK_KEYS)](
        keys, queries, bias, values, mask, out, row_max, row_sum, grad_out, grad_keys, grad_values, *common,
        FORWARD=forward, **blocks,
    )  # fmt: skip
    return grad_keys, grad_queries, grad_queries.sum(dim=(0, 1)), grad_values
