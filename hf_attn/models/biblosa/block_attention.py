"""Masked multi-dimensional (feature-wise) self-attention with the scaled-tanh score, computed in chunks of
sequences and, for training, with a hand-written backward that recomputes the scores instead of storing them.

This is the one kernel of Bi-BloSAN (Shen et al., ICLR 2018, §3.1): the intra-block attention runs it over every block
(G = B·m sequences of length r) and the inter-block attention over the block summaries (G = B sequences of length m).
For query i, key j and feature k:

    score_ijk = c·tanh((key_jk + query_ik + bias_k) / c)                          (§3.1, the masked token2token f)
    P_ijk     = softmax_j(score_ijk) over the allowed keys, 0 elsewhere             (feature-wise softmax)
    out_ik    = Σ_j P_ijk · value_jk

with allowed(i, j) = direction(i, j) ∧ mask_i ∧ mask_j; a query without an allowed key gets P = 0 and out = 0
(the original's −1e30 additive mask followed by a multiplication by the mask gives the same).

Memory. The score tensor is (G, L, L, H): n·r·H for the intra-block attention, against n²·H for full token2token
attention (DiSAN). Plain autograd keeps several such tensors (the tanh, the softmax, the products) until the
backward pass. `multi_dimensional_attention(..., recompute=True)` keeps only its O(G·L·H) inputs and output; the
backward pass recomputes P chunk by chunk and applies, with g = ∂loss/∂out:

    ∂value_j  = Σ_i P_ij ⊙ g_i
    ∂score_ij = P_ij ⊙ g_i ⊙ (value_j − out_i)       (softmax backward; Σ_j P_ij ⊙ value_j = out_i)
    ∂u_ij     = ∂score_ij ⊙ (1 − tanh²(u_ij / c))     (u = key + query + bias)
    ∂query_i  = Σ_j ∂u_ij,  ∂key_j = Σ_i ∂u_ij,  ∂bias = Σ_ij ∂u_ij

Both passes work on at most `CHUNK_ELEMENTS` score elements at a time, so the transient memory is bounded too: a
chunk is several whole sequences when one fits (G_chunk · L · L · H ≤ CHUNK_ELEMENTS, the intra-block case), or
else a range of queries of one sequence against all its keys (the inter-block attention over m = n / r blocks, whose
L · L · H grows as m²: at n = 20,000 and r = 3 one sequence alone is 6,667² · H elements). The backward pass then
sums ∂key and ∂value over the query ranges. The feature-averaged maps P̄ `(G, L, L)` are what stays quadratic in L;
they are computed only when asked for (`with_maps`).

Fused. On CUDA with triton installed, the same maths run as fused kernels (`triton_block_attention.py`): the scores
live in registers tile by tile, an online feature-wise softmax in the forward pass, its statistics (max and sum per
query and feature, O(G·L·H)) kept for the backward pass, which recomputes P tile by tile as the chunks here do.
This file's chunked path stays the reference: the CPU's, an export's, and the tests' (the kernels run in Triton's
interpreter there, `TRITON_ON_CPU`).

Shape legend: G sequences (blocks), L positions per sequence (queries i and keys j), H features.
"""

from __future__ import annotations

import torch

from hf_attn.layers.kernels import kernels_apply
from hf_attn.layers.masking import masked_softmax

# Score elements (G_chunk · L · L · H) one chunk may hold: 2^22 fp32 values are 16 MiB per tensor.
CHUNK_ELEMENTS = 1 << 22
# Tests set it to run the fused kernels on CPU tensors (in Triton's interpreter); otherwise they run on CUDA only.
TRITON_ON_CPU = False


def direction_mask(
    length: int, direction: str, device: torch.device | None = None, rows: slice | None = None
) -> torch.Tensor:
    """allowed(i, j) for one sequence, `(L, L)` bool: `"forward"` j < i, `"backward"` j > i (strict: the diagonal is
    excluded, §3.1's M^fw and M^bw). `rows`: only the rows of those queries, `(L_query, L)` (a chunk's; the whole
    matrix is quadratic in L)."""
    keys = torch.arange(length, device=device)
    queries = keys if rows is None else keys[rows]
    if direction == "forward":
        return keys[None, :] < queries[:, None]
    if direction == "backward":
        return keys[None, :] > queries[:, None]
    raise ValueError(f"direction must be 'forward' or 'backward', got {direction!r}.")


def scaled_tanh_scores(
    keys: torch.Tensor, queries: torch.Tensor, bias: torch.Tensor, scale: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """score_ij = c·tanh((key_j + query_i + bias)/c) per feature, `(G, L_query, L_key, H)`; also returns the tanh
    (what the backward pass differentiates)."""
    squashed = torch.tanh((keys[:, None, :, :] + queries[:, :, None, :] + bias) / scale)
    return scale * squashed, squashed


def attention_probabilities(
    keys: torch.Tensor,
    queries: torch.Tensor,
    bias: torch.Tensor,
    mask: torch.Tensor,
    allowed: torch.Tensor,
    scale: float,
    query_mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """P `(G, L_query, L, H)`: the feature-wise softmax over the allowed keys of each query; also the tanh of the
    scores.

    Args:
        keys: the key projection, `(G, L, H)`.
        queries: the query projection, `(G, L_query, H)`: all L queries, or a range of them.
        bias: `(H,)`, added inside the tanh.
        mask: `(G, L)` bool, the real positions (the keys; the queries too unless `query_mask` is given).
        allowed: `(L_query, L)` bool, the direction mask (its rows of the queries given).
        scale: c.
        query_mask: `(G, L_query)` bool, the real positions among the queries given (default: `mask`).
    """
    query_mask = mask if query_mask is None else query_mask
    scores, squashed = scaled_tanh_scores(keys, queries, bias, scale)
    pair_mask = allowed & query_mask[:, :, None] & mask[:, None, :]  # (G, L_query, L_key)
    return masked_softmax(scores, pair_mask[..., None], dim=2), squashed


def _chunks(groups: int, length: int, features: int) -> list[tuple[slice, slice]]:
    """(sequences, queries) index ranges of at most `CHUNK_ELEMENTS` score elements each: whole sequences while one
    fits, else query ranges of one sequence (at least one query: L · H elements)."""
    per_sequence = length * length * features
    if per_sequence <= CHUNK_ELEMENTS:
        group_step, query_step = max(1, CHUNK_ELEMENTS // max(1, per_sequence)), max(1, length)
    else:
        group_step, query_step = 1, max(1, CHUNK_ELEMENTS // max(1, length * features))
    return [
        (slice(group, group + group_step), slice(query, query + query_step))
        for group in range(0, groups, group_step)
        for query in range(0, length, query_step)
    ]


def _chunk_probabilities(keys, queries, bias, mask, direction, scale, part, rows):
    """P and tanh for the sequences `part` and the queries `rows` (`attention_probabilities`); the direction mask
    of those rows only."""
    allowed = direction_mask(keys.size(1), direction, keys.device, rows)
    return attention_probabilities(
        keys[part], queries[part, rows], bias, mask[part], allowed, scale, query_mask=mask[part, rows]
    )


def _chunked_attention(
    keys, queries, bias, values, mask, direction, scale, with_maps
) -> tuple[torch.Tensor, torch.Tensor]:
    """The forward pass chunk by chunk: `(out (G, L, H), maps (G, L, L) or an empty tensor)`, P never held whole."""
    groups, length, features = values.shape
    output = torch.empty(groups, length, features, dtype=values.dtype, device=values.device)
    maps = values.new_empty((groups, length, length) if with_maps else (0,))
    for part, rows in _chunks(groups, length, features):
        probabilities, _ = _chunk_probabilities(keys, queries, bias, mask, direction, scale, part, rows)
        output[part, rows] = (probabilities * values[part, None, :, :]).sum(dim=2)
        if with_maps:
            maps[part, rows] = probabilities.mean(dim=-1)
    return output, maps


class _RecomputedAttention(torch.autograd.Function):
    """The attention with the recomputing backward of the module docstring."""

    @staticmethod
    def forward(ctx, keys, queries, bias, values, mask, direction, scale, with_maps):
        output, maps = _chunked_attention(keys, queries, bias, values, mask, direction, scale, with_maps)
        ctx.save_for_backward(keys, queries, bias, values, mask, output)
        ctx.scale, ctx.direction = scale, direction
        ctx.mark_non_differentiable(maps)
        return output, maps

    @staticmethod
    def backward(ctx, grad_output, _grad_maps):
        keys, queries, bias, values, mask, output = ctx.saved_tensors
        groups, length, features = values.shape
        grad_queries = torch.empty_like(queries)
        grad_keys, grad_values = torch.zeros_like(keys), torch.zeros_like(values)  # summed over query ranges
        grad_bias = torch.zeros_like(bias)
        grad_output = grad_output.to(values.dtype)
        for part, rows in _chunks(groups, length, features):
            probabilities, squashed = _chunk_probabilities(
                keys, queries, bias, mask, ctx.direction, ctx.scale, part, rows
            )
            weighted = probabilities * grad_output[part, rows, None, :]  # P_ij ⊙ g_i
            grad_values[part] += weighted.sum(dim=1)  # Σ_i over this range of queries
            grad_scores = weighted * (values[part, None, :, :] - output[part, rows, None, :])
            grad_inner = grad_scores * (1 - squashed.square())
            grad_queries[part, rows] = grad_inner.sum(dim=2)
            grad_keys[part] += grad_inner.sum(dim=1)
            grad_bias += grad_inner.sum(dim=(0, 1, 2))
        return grad_keys, grad_queries, grad_bias, grad_values, None, None, None, None


class _FusedAttention(torch.autograd.Function):
    """The attention as fused Triton kernels (`triton_block_attention.py`): the same outputs and gradients as
    `_RecomputedAttention`, the scores never in global memory."""

    @staticmethod
    def forward(ctx, keys, queries, bias, values, mask, direction, scale, with_maps):
        from .triton_block_attention import attention_forward

        inputs = [tensor.contiguous() for tensor in (keys, queries, bias, values)]
        output, row_max, row_sum, maps = attention_forward(*inputs, mask, direction == "forward", scale, with_maps)
        ctx.save_for_backward(*inputs, mask, output, row_max, row_sum)
        ctx.scale, ctx.direction = scale, direction
        ctx.mark_non_differentiable(maps)
        return output, maps

    @staticmethod
    def backward(ctx, grad_output, _grad_maps):
        from .triton_block_attention import attention_backward

        keys, queries, bias, values, mask, output, row_max, row_sum = ctx.saved_tensors
        gradients = attention_backward(
            keys, queries, bias, values, mask, output, row_max, row_sum, grad_output.float(),
            ctx.direction == "forward", ctx.scale,
        )  # fmt: skip
        return (*gradients, None, None, None, None)


def multi_dimensional_attention(
    keys: torch.Tensor,
    queries: torch.Tensor,
    bias: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor,
    direction: str,
    scale: float,
    recompute: bool = True,
    with_maps: bool = True,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Masked multi-dimensional directional self-attention over G independent sequences.

    Args:
        keys: W_dep h_j, `(G, L, H)` (the original's "dependent" side).
        queries: W_head h_i, `(G, L, H)` (the "head" side).
        bias: `(H,)`, added inside the tanh.
        values: h_j, `(G, L, H)` (no value projection).
        mask: `(G, L)`, true at real positions.
        direction: `"forward"` (j < i) or `"backward"` (j > i).
        scale: c of the scaled tanh.
        recompute: keep only the inputs for the backward pass and recompute the scores there (the module
            docstring); `False` runs plain autograd, which stores the (G, L, L, H) intermediates.
        with_maps: also return the feature-averaged maps (quadratic in L).

    Returns:
        `(out (G, L, H), maps (G, L, L) or None)`: the attention result, and P averaged over the H features (each
        row a distribution over the allowed keys, or all 0), computed without storing P itself.
    """
    direction_mask(1, direction)  # a bad direction is named here, before any chunk
    mask = mask.to(torch.bool)
    dtype = values.dtype
    with torch.autocast(values.device.type, enabled=False):
        keys, queries, bias, values = keys.float(), queries.float(), bias.float(), values.float()
        # A traced forward (torch.export, torch.compile) runs the plain computation: the chunk loop's step count
        # would fix the batch size in the graph.
        chunked = recompute and not torch.compiler.is_compiling()
        if chunked and kernels_apply(values, on_cpu=TRITON_ON_CPU):  # fused kernels (CUDA): same maths, no scores
            output, maps = _FusedAttention.apply(keys, queries, bias, values, mask, direction, float(scale), with_maps)
        elif chunked and torch.is_grad_enabled():
            output, maps = _RecomputedAttention.apply(
                keys, queries, bias, values, mask, direction, float(scale), with_maps
            )
        elif chunked:  # inference: the chunked forward alone, nothing to store
            output, maps = _chunked_attention(keys, queries, bias, values, mask, direction, float(scale), with_maps)
        else:
            allowed = direction_mask(values.size(1), direction, values.device)
            probabilities, _ = attention_probabilities(keys, queries, bias, mask, allowed, float(scale))
            output = (probabilities * values[:, None, :, :]).sum(dim=2)
            maps = probabilities.mean(dim=-1).detach()
    return output.to(dtype), maps if with_maps else None
