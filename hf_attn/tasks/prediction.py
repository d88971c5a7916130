"""What `predict` shows of a trained model for raw texts (`hf-attn predict`, `TaskShape.predict`): the head's padded
inputs for the texts, and the tokens its first attention map weighs most."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from ..tokenization.bpe import ids_to_tokens

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from ..registry.row import Head

__all__ = ["model_inputs", "top_attended"]


def model_inputs(
    head: Head, tokenizer: PreTrainedTokenizerBase, texts: list[str], pairs: list[str] | None, device: Any
) -> dict[str, torch.Tensor]:
    """The head's input kind's padded batch of `texts` (and their `pairs`), on `device`."""
    return {name: tensor.to(device) for name, tensor in head.inputs.encode(tokenizer, texts, pairs).items()}


def top_attended(model, head: Head, inputs: dict[str, torch.Tensor], output, tokenizer, top_k: int) -> list[list]:
    """Per example, the `top_k` tokens (STCKA: concepts) the head's first attention map weighs most, `(token,
    weight)`, padding never listed. A map with one row per query (hops, tokens, heads) is averaged over its rows;
    over the sentences of a document, a word's weight is its sentence's weight times its weight within the
    sentence."""
    if not head.attention_fields:
        return [[] for _ in range(inputs["input_ids"].shape[0])]
    masks = head.architecture.attention_masks
    name = head.attention_fields[0]
    spec = masks[name]
    attention = getattr(output, name)
    attention = attention[-1] if isinstance(attention, tuple) else attention
    ids_name = spec.ids
    ids = inputs[ids_name]
    if spec.level == "sentences":  # (B, S) over sentences: times the word-level map over the same document
        words = next(
            (
                getattr(output, field)
                for field, mask in masks.items()
                if mask.keys == spec.keys and mask.level is mask.queries is mask.rows is None
            ),
            None,
        )
        attention = attention[..., None] * (words if words is not None else 1.0 / ids.shape[-1])
    while attention.dim() > ids.dim():  # (B, heads, T, T), (B, hops, T), (B, T, T): average the query rows
        attention = attention.mean(dim=-2) if attention.dim() == ids.dim() + 1 else attention.mean(dim=1)
    weights = attention.float().reshape(ids.shape[0], -1)
    ids = ids.reshape(ids.shape[0], -1)
    mask = inputs[spec.keys].reshape(ids.shape[0], -1).bool()
    results = []
    for row in range(ids.shape[0]):
        order = weights[row].masked_fill(~mask[row], -1.0).argsort(descending=True)[: min(top_k, int(mask[row].sum()))]
        tokens = ids_to_tokens(tokenizer, ids_name, ids[row, order].tolist())  # STCKA: concepts
        results.append([(token, round(float(weights[row, i]), 4)) for token, i in zip(tokens, order, strict=True)])
    return results
