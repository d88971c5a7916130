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

Both passes work on at most `CHUNK_ELEMENTS` score elements at a time, so the transient memory is bounded too.

Shape legend: G sequences (blocks), L positions per sequence (queries i and keys j), H features.
"""

from __future__ import annotations

import torch

from hf_attn.layers.masking import masked_softmax

# Score elements (G_chunk · L · L · H) one chunk may hold: 2^22 fp32 values are 16 MiB per tensor.
CHUNK_ELEMENTS = 1 << 22


def direction_mask(length: int, direction: str, device: torch.device | None = None) -> torch.Tensor:
    """allowed(i, j) for one sequence, `(L, L)` bool: `"forward"` j < i, `"backward"` j > i (strict: the diagonal is
    excluded, §3.1's M^fw and M^bw)."""
    positions = torch.arange(length, device=device)
    if direction == "forward":
        return positions[None, :] < positions[:, None]
    if direction == "backward":
        return positions[None, :] > positions[:, None]
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
) -> tuple[torch.Tensor, torch.Tensor]:
    """P `(G, L, L, H)`: the feature-wise softmax over the allowed keys of each query; also the tanh of the scores.

    Args:
        keys / queries: the two projections, `(G, L, H)`.
        bias: `(H,)`, added inside the tanh.
        mask: `(G, L)` bool, the real positions (keys and queries).
        allowed: `(L, L)` bool, the direction mask.
        scale: c.
    """
    scores, squashed = scaled_tanh_scores(keys, queries, bias, scale)
    pair_mask = allowed & mask[:, :, None] & mask[:, None, :]  # (G, L_query, L_key)
    return masked_softmax(scores, pair_mask[..., None], dim=2), squashed


def _chunks(groups: int, length: int, features: int) -> range:
    step = max(1, CHUNK_ELEMENTS // max(1, length * length * features))
    return range(0, groups, step)


def _chunked_attention(keys, queries, bias, values, mask, allowed, scale) -> tuple[torch.Tensor, torch.Tensor]:
    """The forward pass chunk by chunk: `(out (G, L, H), maps (G, L, L))`, P never held whole."""
    groups, length, features = values.shape
    step = _chunks(groups, length, features).step
    output = torch.empty(groups, length, features, dtype=values.dtype, device=values.device)
    maps = torch.empty(groups, length, length, dtype=values.dtype, device=values.device)
    for start in range(0, groups, step):
        part = slice(start, start + step)
        probabilities, _ = attention_probabilities(keys[part], queries[part], bias, mask[part], allowed, scale)
        output[part] = (probabilities * values[part, None, :, :]).sum(dim=2)
        maps[part] = probabilities.mean(dim=-1)
    return output, maps


class _RecomputedAttention(torch.autograd.Function):
    """The attention with the recomputing backward of the module docstring."""

    @staticmethod
    def forward(ctx, keys, queries, bias, values, mask, allowed, scale):
        output, maps = _chunked_attention(keys, queries, bias, values, mask, allowed, scale)
        ctx.save_for_backward(keys, queries, bias, values, mask, allowed, output)
        ctx.scale = scale
        ctx.mark_non_differentiable(maps)
        return output, maps

    @staticmethod
    def backward(ctx, grad_output, _grad_maps):
        keys, queries, bias, values, mask, allowed, output = ctx.saved_tensors
        groups, length, features = values.shape
        step = _chunks(groups, length, features).step
        grad_keys, grad_queries, grad_values = (
            torch.empty_like(keys),
            torch.empty_like(queries),
            torch.empty_like(values),
        )
        grad_bias = torch.zeros_like(bias)
        grad_output = grad_output.to(values.dtype)
        for start in range(0, groups, step):
            part = slice(start, start + step)
            probabilities, squashed = attention_probabilities(
                keys[part], queries[part], bias, mask[part], allowed, ctx.scale
            )
            weighted = probabilities * grad_output[part, :, None, :]  # P_ij ⊙ g_i
            grad_values[part] = weighted.sum(dim=1)
            grad_scores = weighted * (values[part, None, :, :] - output[part, :, None, :])
            grad_inner = grad_scores * (1 - squashed.square())
            grad_queries[part] = grad_inner.sum(dim=2)
            grad_keys[part] = grad_inner.sum(dim=1)
            grad_bias += grad_inner.sum(dim=(0, 1, 2))
        return grad_keys, grad_queries, grad_bias, grad_values, None, None, None


def multi_dimensional_attention(
    keys: torch.Tensor,
    queries: torch.Tensor,
    bias: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor,
    direction: str,
    scale: float,
    recompute: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
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

    Returns:
        `(out (G, L, H), maps (G, L, L))`: the attention result, and P averaged over the H features (each row a
        distribution over the allowed keys, or all 0), computed without storing P itself.
    """
    allowed = direction_mask(values.size(1), direction, values.device)
    mask = mask.to(torch.bool)
    dtype = values.dtype
    with torch.autocast(values.device.type, enabled=False):
        keys, queries, bias, values = keys.float(), queries.float(), bias.float(), values.float()
        # A traced forward (torch.export, torch.compile) runs the plain computation: the chunk loop's step count
        # would fix the batch size in the graph.
        chunked = recompute and not torch.compiler.is_compiling()
        if chunked and torch.is_grad_enabled():
            output, maps = _RecomputedAttention.apply(keys, queries, bias, values, mask, allowed, float(scale))
        elif chunked:  # inference: the chunked forward alone, nothing to store
            output, maps = _chunked_attention(keys, queries, bias, values, mask, allowed, float(scale))
        else:
            probabilities, _ = attention_probabilities(keys, queries, bias, mask, allowed, float(scale))
            output = (probabilities * values[:, None, :, :]).sum(dim=2)
            maps = probabilities.mean(dim=-1).detach()
    return output.to(dtype), maps
