"""Operations on right-padded sequences `(B, T, ...)` that several models share."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from transformers import PreTrainedConfig


def reverse_padded(values: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Reverses the first `lengths[b]` positions of each row of `values` `(B, T, ...)` along axis 1 and leaves the
    padding in place (TF's `reverse_sequence`); applying it twice is the identity."""
    positions = torch.arange(values.size(1), device=values.device)[None, :]
    index = torch.where(positions < lengths[:, None], lengths[:, None] - 1 - positions, positions)  # (B, T)
    return values.gather(1, index.reshape(*index.shape, *[1] * (values.dim() - 2)).expand_as(values))


def shift_tokens_right(labels: torch.Tensor, pad_token_id: int, decoder_start_token_id: int) -> torch.Tensor:
    """Teacher forcing: the decoder reads `<start> y_1 … y_{T−1}` to predict `y_1 … y_T` (-100 labels become pads)."""
    shifted = labels.new_full(labels.shape, pad_token_id)
    shifted[:, 1:] = labels[:, :-1]
    shifted[:, 0] = decoder_start_token_id
    return shifted.masked_fill(shifted == -100, pad_token_id)


def label_ids_of_sequence(sequence: list[int], config: PreTrainedConfig) -> list[int]:
    """Label indices (0 … N−1) of one generated or reference target sequence of a label-sequence head (SGM): the ids
    before the first EOS (a leading start token skipped), specials, −100 and repeats dropped. `config` gives
    `decoder_start_token_id`, `eos_token_id`, `num_special_tokens` and `num_labels`."""
    labels: list[int] = []
    for position, token in enumerate(sequence):
        if position == 0 and token == config.decoder_start_token_id:
            continue
        if token == config.eos_token_id:
            break
        label = token - config.num_special_tokens
        if 0 <= label < config.num_labels and label not in labels:
            labels.append(label)
    return labels
