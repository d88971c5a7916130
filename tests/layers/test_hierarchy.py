"""Recurrent encoders over documents (`hf_attn.layers.hierarchy`): every sentence of every document through the
word RNN in one packed call equals running the RNN over each sentence's words alone, masked words in the middle of
a row are skipped in order, and empty sentences and masked words give zeros."""

from __future__ import annotations

import torch
from torch import nn

from hf_attn.layers.hierarchy import run_rnn_over_sentences, run_rnn_skipping_masked
from hf_attn.layers.rnn import PackedBiRNN


def word_rnn() -> PackedBiRNN:
    torch.manual_seed(0)
    return PackedBiRNN(nn.GRU(4, 3, batch_first=True, bidirectional=True)).eval()


def alone(rnn: PackedBiRNN, words: torch.Tensor) -> torch.Tensor:
    """The RNN over one sequence of words `(n, D)`, unpadded."""
    return rnn.rnn(words[None])[0][0]


def test_every_sentence_in_one_call_equals_each_sentence_alone():
    rnn = word_rnn()
    inputs = torch.randn(2, 3, 5, 4)  # (B, S, T, D)
    lengths = torch.tensor([[5, 2, 0], [1, 0, 4]])  # an empty sentence in each document
    mask = torch.arange(5)[None, None, :] < lengths[..., None]
    with torch.no_grad():
        outputs = run_rnn_over_sentences(rnn, inputs, mask)
        assert outputs.shape == (2, 3, 5, 6)
        for b in range(2):
            for s in range(3):
                n = int(lengths[b, s])
                if n:
                    torch.testing.assert_close(outputs[b, s, :n], alone(rnn, inputs[b, s, :n]), rtol=1e-6, atol=1e-6)
                assert not outputs[b, s, n:].any()  # padding, and a whole empty sentence, at zero


def test_masked_items_inside_a_row_are_skipped_in_order():
    rnn = word_rnn()
    inputs = torch.randn(2, 5, 4)
    mask = torch.tensor([[1, 0, 1, 1, 0], [0, 0, 0, 0, 0]], dtype=torch.bool)
    with torch.no_grad():
        outputs = run_rnn_skipping_masked(rnn, inputs, mask)
        torch.testing.assert_close(outputs[0, [0, 2, 3]], alone(rnn, inputs[0, [0, 2, 3]]), rtol=1e-6, atol=1e-6)
        assert not outputs[0, [1, 4]].any() and not outputs[1].any()  # an all-masked row: zeros
        assert run_rnn_skipping_masked(rnn, inputs[:0], mask[:0]).shape == (0, 5, 6)
