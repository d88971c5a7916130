"""Weight initialisation shared by models whose papers (or original code) draw every weight uniformly."""

from __future__ import annotations

import torch
from torch import nn
from transformers import initialization as init


@torch.no_grad()
def uniform_init(module: nn.Linear | nn.Embedding, bound: float) -> None:
    """A linear layer's weight or an embedding table ~ U(−bound, bound), a bias 0, an embedding's padding row 0
    (unless the table was loaded: transformers marks loaded weights `_is_hf_initialized`)."""
    init.uniform_(module.weight, -bound, bound)
    if isinstance(module, nn.Linear):
        if module.bias is not None:
            init.zeros_(module.bias)
    elif module.padding_idx is not None and not getattr(module.weight, "_is_hf_initialized", False):
        init.zeros_(module.weight[module.padding_idx])
