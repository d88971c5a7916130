"""Recurrent encoders over documents (sentences of words), batched the fast way.

A hierarchical model reads every sentence of every document with the same word-level RNN. Looping over documents,
or over sentence positions, runs the recurrence many times on small batches; padding every document to the
longest one runs it over empty sentences. Here every non-empty sentence of the batch goes through ONE packed RNN
call, empty ones are skipped (eager on the CPU; on an accelerator every sentence enters, so that nothing is read on
the host), and the outputs land back in their `(B, S, T)` slots.

Masks may have holes (a padded sentence between real ones, a masked word inside a sentence): masked items are
skipped, so the recurrence sees exactly the unmasked ones in order, and outputs at masked items are zero.

Shape legend: B documents, S sentences, T words, N non-empty sentences of the batch, D input features, K·H RNN
output features (directions × hidden units).
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import initialization as init

from .attention import AdditiveAttentionPooling
from .initialization import uniform_init
from .rnn import PackedBiRNN, masked_rnn
from .validation import value_checks_apply


def run_rnn_skipping_masked(rnn: PackedBiRNN, inputs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Runs `rnn` over the unmasked items of each row of `inputs (B, L, D)`, in order, as one packed call.

    Unmasked items are first moved to the front of their row (a stable sort keeps their order), the RNN runs packed
    by their counts, and the outputs are moved back. A row without unmasked items gives zeros. Eager on the CPU a
    right-padded mask (the common case) skips the reordering; elsewhere the mask is not read on the host and the
    rows are always reordered.

    Returns `(B, L, K·H)`, zero at masked items. Exported (`torch.export`), the RNN reads the mask as it is: the
    traced recurrence skips masked items by itself (`hf_attn.layers.rnn.masked_rnn`), no reordering needed.
    """
    if torch.compiler.is_exporting():
        return masked_rnn(rnn.rnn, inputs, mask.to(torch.bool))[0]
    if inputs.size(0) == 0:  # nothing to run (packing needs at least one sequence)
        return inputs.new_zeros(*inputs.shape[:2], rnn.output_size)
    mask = mask.to(torch.bool)
    lengths = mask.sum(dim=-1)
    positions = torch.arange(mask.size(-1), device=mask.device)
    right_padded = positions < lengths[:, None]  # (B, L)
    if value_checks_apply(mask) and torch.equal(mask, right_padded):  # already right-padded: no reordering
        return rnn(inputs, mask)
    order = torch.sort((~mask).to(torch.int8), dim=-1, stable=True).indices  # unmasked first, in order, (B, L)
    aligned = rnn(inputs.gather(1, order[..., None].expand_as(inputs)), right_padded)
    # Scatter back: aligned slot j of a row holds item order[j]; its padded slots hold zeros for the masked items.
    return torch.zeros_like(aligned).scatter(1, order[..., None].expand_as(aligned), aligned)


def run_rnn_over_sentences(rnn: PackedBiRNN, inputs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Runs `rnn` over the words of every sentence of `inputs (B, S, T, D)` in ONE packed call.

    Eager on the CPU only the N sentences with at least one unmasked word enter the RNN, and the outputs are
    scattered back to their `(B, S)` slots. Elsewhere (an accelerator, a compiled or exported graph) every sentence
    enters: selecting the non-empty ones has a data-dependent size, read on the host. Returns `(B, S, T, K·H)`, zero
    at masked words and empty sentences.
    """
    batch, sentences, words, features = inputs.shape
    flat_inputs, flat_mask = inputs.reshape(batch * sentences, words, features), mask.reshape(-1, words).bool()
    if not value_checks_apply(flat_mask):
        return run_rnn_skipping_masked(rnn, flat_inputs, flat_mask).view(batch, sentences, words, -1)
    nonempty = flat_mask.any(dim=-1).nonzero().squeeze(-1)  # (N,)
    encoded = run_rnn_skipping_masked(rnn, flat_inputs[nonempty], flat_mask[nonempty])  # (N, T, K·H)
    outputs = encoded.new_zeros(batch * sentences, words, encoded.size(-1)).index_copy(0, nonempty, encoded)
    return outputs.view(batch, sentences, words, -1)


@torch.no_grad()
def init_hierarchical_attention_weights(module: nn.Module, bound: float) -> None:
    """HAN's initialisation (Yang et al. 2016, §2.2), shared by the hierarchical models built like it (BI-Attention):
    embeddings, projections and the context vectors u_w, u_s ~ U(−bound, bound) ("randomly initialized and jointly
    learned"); biases 0; the RNNs with PyTorch's U(−1/√H, 1/√H); the padding row at zero."""
    if isinstance(module, nn.Linear | nn.Embedding):
        uniform_init(module, bound)
    elif isinstance(module, nn.RNNBase):
        rnn_bound = module.hidden_size**-0.5
        for parameter in module.parameters():
            init.uniform_(parameter, -rnn_bound, rnn_bound)
    elif isinstance(module, AdditiveAttentionPooling):
        init.uniform_(module.context, -bound, bound)
