"""A packed (bidirectional) RNN wrapper.

Running an RNN over right-padded batches without packing lets the backward direction start on the pads, so the
states of real tokens depend on how much padding the batch needed. Packing by lengths removes that dependence:
an example's outputs are the same alone or padded in any batch.

Shape legend: ``B`` batch, ``T`` tokens, ``D`` input features, ``H`` hidden units per direction, ``K`` directions.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
from transformers.modeling_layers import GradientCheckpointingLayer

from .validation import check_right_padded


class PackedBiRNN(GradientCheckpointingLayer):
    """Runs a batch-first ``nn.LSTM``/``nn.GRU``/``nn.RNN`` over right-padded inputs, packed by their lengths.

    ``pack_padded_sequence(enforce_sorted=False)`` sorts by length and restores the batch order on the way out.
    Outputs at padded positions are zero; an all-padding row yields zeros (it runs one step internally, since
    packing needs lengths ≥ 1, and that step is discarded).

    Args:
        rnn: the recurrent module; must be built with ``batch_first=True``.

    ``forward(inputs (B, T, D), attention_mask (B, T) | None, pack=True, initial_state=None) -> (B, T, K·H)``. With
    ``pack=False`` (or no mask) the RNN runs over every position, pads included, as several original implementations
    do. ``initial_state`` is the RNN's ``hx`` (``(h0, c0)`` for an LSTM, each ``(layers·K, B, H)``); ``None``: zeros.
    """

    def __init__(self, rnn: nn.RNNBase) -> None:
        super().__init__()
        if not rnn.batch_first:
            raise ValueError("PackedBiRNN expects an RNN built with batch_first=True.")
        self.rnn = rnn

    @property
    def output_size(self) -> int:
        """``K·H``: features per position of the outputs."""
        hidden = getattr(self.rnn, "proj_size", 0) or self.rnn.hidden_size
        return hidden * (2 if self.rnn.bidirectional else 1)

    def forward(
        self,
        inputs: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        pack: bool = True,
        initial_state: torch.Tensor | tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> torch.Tensor:
        if attention_mask is None or not pack:
            return self.rnn(inputs, initial_state)[0]
        mask = attention_mask.to(torch.bool)
        lengths = mask.sum(dim=-1)
        check_right_padded(
            mask,
            "PackedBiRNN needs right-padded inputs (attention_mask of the form 1…1 0…0); "
            "use a tokenizer with padding_side='right'.",
        )
        packed = pack_padded_sequence(inputs, lengths.clamp(min=1).cpu(), batch_first=True, enforce_sorted=False)
        outputs, _ = self.rnn(packed, initial_state)  # (hx is permuted to the packed order by the RNN itself)
        outputs, _ = pad_packed_sequence(outputs, batch_first=True, total_length=inputs.size(1))
        return outputs * (lengths > 0)[:, None, None].to(outputs.dtype)
