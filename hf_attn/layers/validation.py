"""Input checks that turn silent garbage (an index error deep in an embedding, a broadcast that hides a transposed
mask) into a clear ``ValueError`` at the model's door.

Two kinds of check, by what they cost:

* **Static checks** read only shapes and dtypes: rank, an empty axis, a mask of the wrong shape, float ids. They run
  on every call, also while `torch.compile` or `torch.export` traces a forward (shapes are known there).
* **Value checks** read the numbers: ids inside the vocabulary, a right-padded mask. Reading a number of a CUDA
  tensor stalls the device until it is computed (a host sync), and inside a traced graph it is a data-dependent
  branch that `torch.export` cannot follow. So they run only where they cost nothing: in eager mode, on tensors on
  the CPU (`value_checks_apply`). On an accelerator an id outside the vocabulary meets the embedding's own
  device-side assert instead, as in transformers' models; run a batch on the CPU once to have it named.

The transformers input contract: ``attention_mask=None`` means every position is real, and a pad id inside a text is
just a token (transformers' models never derive a mask from ``pad_token_id``).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

import torch

_VALUE_CHECKS = contextvars.ContextVar("hf_attn_value_checks", default=True)


def value_checks_apply(tensor: torch.Tensor) -> bool:
    """Whether checks that read `tensor`'s values run: in eager mode on the CPU (no device sync, no traced branch),
    unless `value_checks(False)` is in effect."""
    if torch.compiler.is_compiling():  # first: a traced forward never reads the context variable
        return False
    return tensor.device.type == "cpu" and _VALUE_CHECKS.get()


@contextlib.contextmanager
def value_checks(enabled: bool) -> Iterator[None]:
    """Switches the value checks of the CPU's eager forwards on or off inside the block: with `False` a CPU forward
    reads no tensor value on the host, as on an accelerator (a CPU server that trusts its inputs saves the scans;
    the tests check that forwards read nothing else)."""
    token = _VALUE_CHECKS.set(bool(enabled))
    try:
        yield
    finally:
        _VALUE_CHECKS.reset(token)


def check_right_padded(mask: torch.Tensor, message: str) -> None:
    """Raises `ValueError(message)` unless every row of the boolean `mask` has the form 1…1 0…0 along its last axis
    (a value check: skipped where `value_checks_apply` is false)."""
    if not value_checks_apply(mask):
        return
    positions = torch.arange(mask.size(-1), device=mask.device)
    if not torch.equal(mask, positions < mask.sum(dim=-1, keepdim=True)):
        raise ValueError(message)


def check_token_inputs(
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    vocab_size: int,
    shape: str = "(batch, tokens)",
    name: str = "input_ids",
    batch_size: int | None = None,
    right_padded: bool = False,
) -> torch.Tensor:
    """Validates token ids and their mask; returns the mask as a boolean tensor.

    Args:
        input_ids: integer token ids whose rank is the number of names in ``shape``.
        attention_mask: 1 for real tokens, 0 for padding, same shape as ``input_ids``; ``None``: every position is
            real (transformers' contract: a pad id inside a text is a token like any other).
        vocab_size: ids must lie in ``[0, vocab_size)`` (a value check).
        shape: the expected shape, e.g. ``"(batch, tokens)"``; its rank is checked and it is quoted in errors.
        name: the argument's name, quoted in errors.
        batch_size: the batch size ``input_ids`` must have: the first sequence's, when checking a pair's second.
        right_padded: refuse a mask that is not of the form 1…1 0…0 along its last axis (models that read lengths;
            a value check).

    An empty batch or a zero-length axis is refused too: there is nothing to encode, and an all-padding row of
    length 1 is the defined way to pass an empty text.
    """
    rank = shape.count(",") + 1
    if not isinstance(input_ids, torch.Tensor):
        raise ValueError(f"`{name}` must be a torch.Tensor of shape {shape}, got {type(input_ids).__name__}.")
    if input_ids.dim() != rank:
        raise ValueError(
            f"`{name}` must have {rank} dimensions {shape}, got shape {tuple(input_ids.shape)} "
            f"({input_ids.dim()} dimensions)."
        )
    if input_ids.numel() == 0:
        raise ValueError(
            f"`{name}` is empty (shape {tuple(input_ids.shape)} for {shape}): a batch needs an example and every "
            "axis a position. Pass an empty text as one padding position (attention_mask 0): it gets a defined output."
        )
    if batch_size is not None and input_ids.size(0) != batch_size:
        raise ValueError(
            f"`{name}` must have the batch size of `input_ids`: got {input_ids.size(0)} and {batch_size}."
        )
    if input_ids.is_floating_point() or input_ids.is_complex():
        raise ValueError(f"`{name}` must hold integer token ids, got dtype {input_ids.dtype}.")
    if value_checks_apply(input_ids):
        smallest, largest = int(input_ids.min()), int(input_ids.max())
        if smallest < 0 or largest >= vocab_size:
            raise ValueError(
                f"`{name}` holds token ids outside the vocabulary [0, {vocab_size}): min {smallest}, max {largest}. "
                "Was the tokenizer built for this model?"
            )
    mask_name = name.replace("input_ids", "attention_mask").replace("inputs_embeds", "attention_mask")
    if attention_mask is None:
        return torch.ones_like(input_ids, dtype=torch.bool)
    if attention_mask.shape != input_ids.shape:
        raise ValueError(
            f"`{mask_name}` must have the same shape as `{name}` {shape}: got {tuple(attention_mask.shape)} "
            f"for a `{name}` of shape {tuple(input_ids.shape)}."
        )
    mask = attention_mask.to(torch.bool)
    if right_padded:
        check_right_padded(
            mask,
            f"`{mask_name}` must be right-padded (each row of the form 1…1 0…0): this model reads sequences by "
            "their lengths. Use a tokenizer with padding_side='right'.",
        )
    return mask


def check_labels(labels: torch.Tensor, shape: tuple[int, ...], num_classes: int) -> None:
    """Validates `labels` before a loss: the expected `shape`, and class ids in [0, num_classes) or −100 (ignored;
    a value check)."""
    if tuple(labels.shape) != tuple(shape):
        raise ValueError(f"`labels` must have shape {tuple(shape)}, got {tuple(labels.shape)}.")
    if labels.is_floating_point():
        raise ValueError(f"`labels` must hold integer class ids, got dtype {labels.dtype}.")
    if not value_checks_apply(labels):
        return
    scored = labels[labels != -100]
    if scored.numel() and (int(scored.min()) < 0 or int(scored.max()) >= num_classes):
        raise ValueError(
            f"`labels` holds ids outside [0, {num_classes}) (−100 marks an ignored position): "
            f"min {int(scored.min())}, max {int(scored.max())}."
        )


def check_multi_hot(labels: torch.Tensor) -> None:
    """Refuses multi-hot `labels` outside [0, 1] (soft targets allowed) other than −100 (an entry not scored),
    naming their range (a value check: skipped where `value_checks_apply` is false, so a compiled or accelerator
    forward reads no label value on the host)."""
    if not value_checks_apply(labels):
        return
    scored = labels[labels != -100]
    if bool(((scored < 0) | (scored > 1)).any()):
        raise ValueError(
            "`labels` must hold multi-hot values in [0, 1] (1 = the label applies) or -100 (not scored), got min "
            f"{float(scored.min())} and max {float(scored.max())}."
        )


def embed_inputs(
    embedding: torch.nn.Module,
    input_ids: torch.Tensor | None,
    inputs_embeds: torch.Tensor | None,
    attention_mask: torch.Tensor | None,
    shape: str = "(batch, tokens)",
    name: str = "input_ids",
    batch_size: int | None = None,
    right_padded: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The token vectors and the boolean mask of a text given as ids (`embedding(input_ids)`, checked by
    `check_token_inputs` against the embedding's rows) or as vectors (`inputs_embeds`, shape `shape +
    (E,)`: what PEFT's prompt tuning and any caller with its own embeddings pass). Exactly one of the two; every check
    names the argument at fault."""
    embeds_name = name.replace("input_ids", "inputs_embeds")
    if (input_ids is None) == (inputs_embeds is None):
        raise ValueError(f"Pass exactly one of `{name}` and `{embeds_name}`.")
    if input_ids is not None:
        vocab_size = embedding.weight.size(0)  # its rows: a PEFT-wrapped embedding has no `num_embeddings`
        mask = check_token_inputs(input_ids, attention_mask, vocab_size, shape, name, batch_size, right_padded)
        return embedding(input_ids), mask
    width = embedding.embedding_dim
    mask = check_inputs_embeds(inputs_embeds, attention_mask, width, shape, embeds_name, batch_size, right_padded)
    return inputs_embeds, mask


def check_inputs_embeds(
    inputs_embeds: torch.Tensor,
    attention_mask: torch.Tensor | None,
    width: int,
    shape: str = "(batch, tokens)",
    name: str = "inputs_embeds",
    batch_size: int | None = None,
    right_padded: bool = False,
) -> torch.Tensor:
    """Validates vectors given in place of token ids, `shape + (width,)` floats, and their mask as
    `check_token_inputs` validates ids (rank, emptiness, batch size, the mask's shape and padding); returns the mask
    as a boolean tensor."""
    rank = shape.count(",") + 1
    if (
        not isinstance(inputs_embeds, torch.Tensor)
        or inputs_embeds.dim() != rank + 1
        or inputs_embeds.size(-1) != width
    ):
        got = tuple(inputs_embeds.shape) if isinstance(inputs_embeds, torch.Tensor) else type(inputs_embeds).__name__
        raise ValueError(f"`{name}` must have shape {shape[:-1]}, {width}), got {got}.")
    if not inputs_embeds.is_floating_point():
        raise ValueError(f"`{name}` must hold float vectors, got dtype {inputs_embeds.dtype}.")
    # The ids' checks on a stand-in of their shape: rank, emptiness, batch size and the mask (never their values).
    stand_in = torch.zeros(inputs_embeds.shape[:-1], dtype=torch.long, device=inputs_embeds.device)
    return check_token_inputs(stand_in, attention_mask, 1, shape, name, batch_size, right_padded)
