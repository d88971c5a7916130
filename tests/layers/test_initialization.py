"""Uniform initialisation (`hf_attn.layers.initialization.uniform_init`): weights in (−bound, bound), biases zero,
an embedding's padding row zero; a table transformers loaded is left as it was."""

from __future__ import annotations

import torch
from torch import nn

from hf_attn.layers.initialization import uniform_init


def test_weights_are_bounded_biases_and_the_padding_row_zero():
    torch.manual_seed(0)
    linear, embedding = nn.Linear(50, 40), nn.Embedding(30, 20, padding_idx=0)
    for module in (linear, embedding):
        uniform_init(module, 0.05)
        assert module.weight.abs().max() <= 0.05 and module.weight.std() > 0.02  # spread over the interval
    assert torch.equal(linear.bias, torch.zeros(40)) and torch.equal(embedding.weight[0], torch.zeros(20))


def test_a_loaded_table_is_kept_whole_its_padding_row_included():
    embedding = nn.Embedding(5, 4, padding_idx=1)
    with torch.no_grad():
        embedding.weight.fill_(0.5)  # the weights a checkpoint brought
    embedding.weight._is_hf_initialized = True  # what transformers marks on a weight it loaded
    uniform_init(embedding, 0.1)
    assert torch.equal(embedding.weight, torch.full((5, 4), 0.5))
