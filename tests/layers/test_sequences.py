"""Right-padded sequences (`hf_attn.layers.sequences`): each row's real positions reversed with its padding left in
place, and the decoder's teacher-forced inputs."""

from __future__ import annotations

import torch

from hf_attn.layers.sequences import reverse_padded, shift_tokens_right


def test_each_row_reverses_its_own_length_and_twice_is_the_identity():
    values = torch.arange(2 * 5 * 3, dtype=torch.float32).reshape(2, 5, 3)  # (B, T, D)
    lengths = torch.tensor([3, 0])
    reversed_ = reverse_padded(values, lengths)
    assert torch.equal(reversed_[0, :3], values[0, :3].flip(0))
    assert torch.equal(reversed_[0, 3:], values[0, 3:]) and torch.equal(reversed_[1], values[1])  # padding stays
    assert torch.equal(reverse_padded(reversed_, lengths), values)
    full = torch.tensor([5, 5])
    assert torch.equal(reverse_padded(values, full), values.flip(1))


def test_the_decoder_reads_the_start_then_the_labels_shifted_with_minus_100_as_padding():
    labels = torch.tensor([[7, 8, 9, 2], [5, 2, -100, -100]])
    assert shift_tokens_right(labels, pad_token_id=0, decoder_start_token_id=1).tolist() == [
        [1, 7, 8, 9],
        [1, 5, 2, 0],
    ]
