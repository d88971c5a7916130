"""Additive attention pooling (Bahdanau et al. 2015; Yang et al. 2016; Lin et al. 2017).

Scores each position with a one-hidden-layer feed-forward net and pools the sequence with the normalised scores:

    u_t = tanh(W_1 h_t + b_1)            (Yang et al. 2016, eq. 5; Lin et al. 2017, eq. 5 with b_1 = 0)
    e_{r,t} = w_rᵀ u_t                    one context vector w_r per hop r (Lin: the rows of W_s2; HAN: u_w)
    α_{r,·} = softmax_t(e_{r,·})          over unmasked positions only
    m_r = Σ_t α_{r,t} h_t

Shape legend: ``B`` batch, ``T`` tokens, ``D`` input features, ``A`` attention units, ``R`` hops.
"""

from __future__ import annotations

import torch
from torch import nn

from .layers_masking import masked_softmax


class AdditiveAttentionPooling(nn.Module):
    """Multi-hop additive attention pooling.

    Args:
        input_size: ``D``, features of each position.
        attention_size: ``A``, hidden units of the scorer (Lin: d_a; HAN: the context-vector size).
        num_hops: ``R``, independent attention distributions (Lin: r; HAN: 1).
        bias: whether ``W_1`` has a bias (HAN: yes; Lin: no).
        dropout: dropout on the scorer's input only (Lin et al.'s implementation drops ``H`` before ``W_s1``
            while pooling the un-dropped ``H``).
        additive_mask_value: ``None`` excludes masked positions exactly (zero weight; an all-masked row pools to
            zeros). A float reproduces implementations that instead add ``value`` to masked scores (Lin et al.'s
            code adds -10000), which differs only on all-masked rows.

    Parameters: ``projection`` (W_1, b_1) and ``context`` (``(R, A)``, one context vector per hop). ``context`` starts
    at zero, so every hop starts uniform: there a penalty on the attention (Lin et al.'s P) has no gradient, and
    the task loss decides where the hops go before anything else can lock them onto arbitrary tokens.

    ``forward(hidden_states, attention_mask=None, values=None, map_shape=None)`` scores ``hidden_states`` and pools
    ``values`` (default: ``hidden_states``; BI-Attention scores sentences from more features than it pools).
    ``map_shape`` is the shape the caller returns the weights in (HAN's words: ``(B, S, T)`` for ``B·S`` sentences):
    they are reshaped to it before they pool, so the map a model returns is the tensor its output was computed
    from, and its gradient is there to read (``retain_grad``, attention × gradient attributions).

    Returns from ``forward``: ``(pooled (B, R, D'), weights (B, R, T) or map_shape)``, ``D'`` the features of the
    pooled values.
    """

    def __init__(
        self,
        input_size: int,
        attention_size: int,
        num_hops: int = 1,
        bias: bool = True,
        dropout: float = 0.0,
        additive_mask_value: float | None = None,
    ) -> None:
        super().__init__()
        self.projection = nn.Linear(input_size, attention_size, bias=bias)
        self.context = nn.Parameter(torch.zeros(num_hops, attention_size))
        self.dropout = nn.Dropout(dropout)
        self.additive_mask_value = additive_mask_value

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        values: torch.Tensor | None = None,
        map_shape: tuple[int, ...] | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        keys = torch.tanh(self.projection(self.dropout(hidden_states)))  # u_t, (B, T, A)
        scores = torch.matmul(self.context, keys.transpose(1, 2))  # e = w_rᵀ u_t, (B, R, T)
        mask = None if attention_mask is None else attention_mask[:, None, :].to(torch.bool)  # (B, 1, T)
        if mask is not None and self.additive_mask_value is not None:
            weights = torch.softmax(scores + self.additive_mask_value * (~mask).to(scores.dtype), dim=-1)
        else:
            weights = masked_softmax(scores, mask, dim=-1)
        if map_shape is not None:  # the returned map is the one that pools
            returned = weights.reshape(map_shape)
            weights = returned.reshape(weights.shape)
        else:
            returned = weights
        pooled = torch.bmm(weights, hidden_states if values is None else values)  # (B, R, D')
        return pooled, returned
