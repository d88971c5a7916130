"""The pieces of hf_attn that the stcka model computes with, copied beside it.

transformers ships a saved model with its own folder's files only (`trust_remote_code`), so the model file imports
these from here. Every block is a marked copy that `python -m hf_attn.utils.copies` keeps identical to its source:
edit the source, then run `make format`.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
from transformers import PreTrainedConfig


# Copied from hf_attn.layers.masking.masked_softmax
def masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None, dim: int = -1) -> torch.Tensor:
    """Softmax of ``scores`` over ``dim`` restricted to the positions where ``mask`` is true.

    Masked positions get exactly 0. A row without a single unmasked position gives all zeros, never NaN:
    such rows are what an all-padding example produces, and a NaN there would poison the whole batch's gradient.

    Args:
        scores: attention logits, e.g. ``(B, R, T)``.
        mask: boolean or 0/1 tensor broadcastable to ``scores`` (e.g. ``(B, 1, T)``); ``None`` means no masking.
        dim: the dimension to normalise over.
    """
    if mask is None:
        return torch.softmax(scores, dim=dim)
    mask = mask.to(torch.bool)
    # The most negative finite value, not -inf: exp(min - max) is exactly 0 whenever a row has a real score,
    # and a fully masked row stays finite (uniform) before the multiplication below zeroes it.
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return torch.softmax(scores, dim=dim) * mask


# Copied from hf_attn.layers.rnn.PackedBiRNN
class PackedBiRNN(nn.Module):
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
        positions = torch.arange(mask.size(-1), device=mask.device)
        if not torch.equal(mask, positions[None, :] < lengths[:, None]):
            raise ValueError(
                "PackedBiRNN needs right-padded inputs (attention_mask of the form 1…1 0…0); "
                "use a tokenizer with padding_side='right'."
            )
        packed = pack_padded_sequence(inputs, lengths.clamp(min=1).cpu(), batch_first=True, enforce_sorted=False)
        outputs, _ = self.rnn(packed, initial_state)  # (hx is permuted to the packed order by the RNN itself)
        outputs, _ = pad_packed_sequence(outputs, batch_first=True, total_length=inputs.size(1))
        return outputs * (lengths > 0)[:, None, None].to(outputs.dtype)


# Copied from hf_attn.layers.validation.check_token_inputs
def check_token_inputs(
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    vocab_size: int,
    pad_token_id: int | None = None,
    shape: str = "(batch, tokens)",
    name: str = "input_ids",
    batch_size: int | None = None,
    right_padded: bool = False,
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
        right_padded: refuse a mask that is not of the form 1…1 0…0 along its last axis (models that read lengths).

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
    smallest, largest = int(input_ids.min()), int(input_ids.max())
    if smallest < 0 or largest >= vocab_size:
        raise ValueError(
            f"`{name}` holds token ids outside the vocabulary [0, {vocab_size}): min {smallest}, max {largest}. "
            "Was the tokenizer built for this model?"
        )
    mask_name = name.replace("input_ids", "attention_mask")
    if attention_mask is None:
        mask = input_ids != pad_token_id if pad_token_id is not None else torch.ones_like(input_ids, dtype=torch.bool)
    elif attention_mask.shape != input_ids.shape:
        raise ValueError(
            f"`{mask_name}` must have the same shape as `{name}` {shape}: got {tuple(attention_mask.shape)} "
            f"for a `{name}` of shape {tuple(input_ids.shape)}."
        )
    else:
        mask = attention_mask.to(torch.bool)
    if right_padded:
        positions = torch.arange(mask.size(-1), device=mask.device)
        if not torch.equal(mask, positions < mask.sum(dim=-1, keepdim=True)):
            raise ValueError(
                f"`{mask_name}` must be right-padded (each row of the form 1…1 0…0): this model reads sequences by "
                "their lengths. Use a tokenizer with padding_side='right'."
            )
    return mask


# Copied from hf_attn.layers.validation.check_labels
def check_labels(labels: torch.Tensor, shape: tuple[int, ...], num_classes: int) -> None:
    """Validates `labels` before a loss: the expected `shape`, and class ids in [0, num_classes) or −100 (ignored)."""
    if tuple(labels.shape) != tuple(shape):
        raise ValueError(f"`labels` must have shape {tuple(shape)}, got {tuple(labels.shape)}.")
    if labels.is_floating_point():
        raise ValueError(f"`labels` must hold integer class ids, got dtype {labels.dtype}.")
    scored = labels[labels != -100]
    if scored.numel() and (int(scored.min()) < 0 or int(scored.max()) >= num_classes):
        raise ValueError(
            f"`labels` holds ids outside [0, {num_classes}) (−100 marks an ignored position): "
            f"min {int(scored.min())}, max {int(scored.max())}."
        )


# Copied from hf_attn.utils.loading.SafetensorsLoadingMixin
class SafetensorsLoadingMixin:
    """`from_pretrained` for hf_attn models: safetensors only (a folder holding only pickle weights is refused, and
    `use_safetensors=False` raises: loading never unpickles), weights verified before use; `save_pretrained` writes
    the checksum manifest. Listed before `PreTrainedModel` in a model's bases."""

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *args, **kwargs):
        if kwargs.get("use_safetensors") is False:
            raise ValueError("hf_attn models load safetensors only; pickle checkpoints are never unpickled.")
        kwargs["use_safetensors"] = True
        try:  # hf_attn installed: its integrity checks and Hub-cache repair
            from hf_attn.utils import hub_cache, integrity
        except ImportError:
            hub_cache = integrity = None
        if integrity is not None:
            integrity.verify_before_load(pretrained_model_name_or_path, kwargs)
        try:
            return super().from_pretrained(pretrained_model_name_or_path, *args, **kwargs)
        except Exception as error:
            explained = hub_cache and hub_cache.explain_load_failure(error, pretrained_model_name_or_path, kwargs)
            if explained is None:
                raise
            raise explained from error

    def save_pretrained(self, save_directory, *args, **kwargs) -> None:
        super().save_pretrained(save_directory, *args, **kwargs)
        try:  # hf_attn installed: the manifest `from_pretrained` and `hf-attn verify` check
            from hf_attn.utils.integrity import write_manifest
        except ImportError:
            write_manifest = None
        if write_manifest is not None and kwargs.get("is_main_process", True):
            write_manifest(save_directory)


# Copied from hf_attn.layers.losses.classification_loss
def classification_loss(config: PreTrainedConfig, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The task loss by `config.problem_type` (inferred from `num_labels` and the labels' dtype, as transformers)."""
    if config.problem_type is None:
        if config.num_labels == 1:
            config.problem_type = "regression"
        elif labels.dtype in (torch.long, torch.int):
            config.problem_type = "single_label_classification"
        else:
            config.problem_type = "multi_label_classification"
    if config.problem_type == "regression":
        if labels.numel() != logits.numel():
            raise ValueError(
                f"`labels` must hold {logits.numel()} regression targets, got shape {tuple(labels.shape)}."
            )
        return nn.functional.mse_loss(logits.squeeze(-1), labels.to(logits.dtype).view(-1))
    if config.problem_type == "single_label_classification":
        return token_cross_entropy(logits.view(-1, config.num_labels), labels.view(-1), batch_shape=logits.shape[:1])
    if tuple(labels.shape) != tuple(logits.shape):
        raise ValueError(f"`labels` must have shape {tuple(logits.shape)} (multi-hot), got {tuple(labels.shape)}.")
    if labels.numel() and (float(labels.min()) < 0 or float(labels.max()) > 1):
        raise ValueError(
            f"`labels` must hold multi-hot values in [0, 1] (1 = the label applies), got min {float(labels.min())} "
            f"and max {float(labels.max())}."
        )
    return nn.functional.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype))


# Copied from hf_attn.layers.losses.token_cross_entropy
def token_cross_entropy(
    logits: torch.Tensor,
    labels: torch.Tensor,
    num_items_in_batch: torch.Tensor | int | None = None,
    label_smoothing: float = 0.0,
    batch_shape: torch.Size | tuple[int, ...] | None = None,
) -> torch.Tensor:
    """Mean cross-entropy over the positions whose label is not -100: `logits (..., V)`, `labels (...)`.

    The one rule for a batch with nothing to score: the sum over no positions is 0 and is divided by 1, so the loss
    is 0 with a gradient of 0, never NaN. A NaN from real scores still comes out as NaN (divergence stays visible).
    `num_items_in_batch` (from `Trainer` under gradient accumulation) replaces the batch's own count.
    `labels` must have the logits' leading shape (`batch_shape`, when the logits were flattened first) and hold
    ids in [0, V) or −100; anything else is a `ValueError` naming `labels`.
    """
    check_labels(labels, logits.shape[:-1] if batch_shape is None else batch_shape, logits.size(-1))
    summed = nn.functional.cross_entropy(
        logits.float().reshape(-1, logits.size(-1)),
        labels.reshape(-1),
        ignore_index=-100,
        reduction="sum",
        label_smoothing=label_smoothing,
    )
    count = (labels != -100).sum() if num_items_in_batch is None else num_items_in_batch
    return summed / torch.as_tensor(count, device=summed.device).clamp(min=1).to(summed.dtype)


# Copied from hf_attn.layers.outputs.output_flags
def output_flags(
    config: PreTrainedConfig,
    output_attentions: bool | None,
    output_hidden_states: bool | None,
    return_dict: bool | None,
) -> tuple[bool, bool, bool]:
    """`(output_attentions, output_hidden_states, return_dict)` as transformers resolves them: an argument left
    `None` takes the config's value (`config.output_attentions`, `config.output_hidden_states`,
    `config.return_dict`)."""
    return (
        config.output_attentions if output_attentions is None else output_attentions,
        config.output_hidden_states if output_hidden_states is None else output_hidden_states,
        config.return_dict if return_dict is None else return_dict,
    )
