"""Input checks that turn silent garbage (an index error deep in an embedding, a broadcast that hides a transposed
mask) into a clear ``ValueError`` at the model's door."""

from __future__ import annotations

import torch


def check_token_inputs(
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    vocab_size: int,
    pad_token_id: int | None = None,
    shape: str = "(batch, tokens)",
    name: str = "input_ids",
    batch_size: int | None = None,
) -> torch.Tensor:
    """Validates token ids and their mask; returns the mask as a boolean tensor.

    Args:
        input_ids: integer token ids whose rank is the number of names in ``shape``.
        attention_mask: 1 for real tokens, 0 for padding, same shape as ``input_ids``; ``None`` derives it from
            ``pad_token_id`` (every position is real when that is ``None`` too).
        vocab_size: ids must lie in ``[0, vocab_size)``.
        pad_token_id: the padding id used when no mask is given.
        shape: the expected shape, e.g. ``"(batch, tokens)"``; its rank is checked and it is quoted in errors.
        name: the argument's name, quoted in errors.
        batch_size: the batch size ``input_ids`` must have: the first sequence's, when checking a pair's second.
    """
    rank = shape.count(",") + 1
    if not isinstance(input_ids, torch.Tensor):
        raise ValueError(f"`{name}` must be a torch.Tensor of shape {shape}, got {type(input_ids).__name__}.")
    if input_ids.dim() != rank:
        raise ValueError(
            f"`{name}` must have {rank} dimensions {shape}, got shape {tuple(input_ids.shape)} "
            f"({input_ids.dim()} dimensions)."
        )
    if batch_size is not None and input_ids.size(0) != batch_size:
        raise ValueError(
            f"`{name}` must have the batch size of `input_ids`: got {input_ids.size(0)} and {batch_size}."
        )
    if input_ids.is_floating_point() or input_ids.is_complex():
        raise ValueError(f"`{name}` must hold integer token ids, got dtype {input_ids.dtype}.")
    if input_ids.numel() > 0:
        smallest, largest = int(input_ids.min()), int(input_ids.max())
        if smallest < 0 or largest >= vocab_size:
            raise ValueError(
                f"`{name}` holds token ids outside the vocabulary [0, {vocab_size}): min {smallest}, max {largest}. "
                "Was the tokenizer built for this model?"
            )
    mask_name = name.replace("input_ids", "attention_mask")
    if attention_mask is None:
        if pad_token_id is None:
            return torch.ones_like(input_ids, dtype=torch.bool)
        return input_ids != pad_token_id
    if attention_mask.shape != input_ids.shape:
        raise ValueError(
            f"`{mask_name}` must have the same shape as `{name}` {shape}: got {tuple(attention_mask.shape)} "
            f"for a `{name}` of shape {tuple(input_ids.shape)}."
        )
    return attention_mask.to(torch.bool)
