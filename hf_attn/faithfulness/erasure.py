"""Tokens taken out of a text, and what the model then predicts: the erasure measures of ERASER (DeYoung et al.
2020, "ERASER: A Benchmark to Evaluate Rationalized NLP Models", §4) and the decision flips of Serrano & Smith
(2019, "Is Attention Interpretable?", §4).

For an example x with predicted class ŷ = argmax p(·|x) and a ranking of its tokens (by attention, by Integrated
Gradients, at random), r_k is its k% most important tokens (at least one):

- comprehensiveness(k) = p(ŷ|x) − p(ŷ|x ∖ r_k): how much the prediction loses without them (high is faithful);
- sufficiency(k) = p(ŷ|x) − p(ŷ|r_k): how much it loses with only them (low is faithful);
- their area over the k's (ERASER's AOPC) is the mean over the bins k ∈ {1, 5, 10, 20, 50}%;
- a decision flip: argmax p(·|x ∖ r_1) ≠ ŷ, the single most important token removed.

A token is removed, not masked: the kept tokens close up and the text ends in padding (`remove_tokens`), so a
recurrent encoder reads the shorter text itself (masking a position would leave it in the recurrence). Padding never
changes a model's output (the project's mask contract), so this is the model on the shorter text.

Shapes: B examples; V variants (an example with some of its tokens removed); T tokens, or S sentences × W words of
a document (the shape of the text's `attention_mask`); C classes or labels.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from ..data.importance import TEXT_MASK, unit_mask
from ..data.masks import MaskSpec

# ERASER's bins: the share of a text's tokens taken as its most important (%).
ERASER_KS = (1, 5, 10, 20, 50)


# The prefix of the inputs that give each token of a text its characters (STCKA's `char_input_ids`, `(B, T, C)`).
CHARACTERS = "char_"


def text_inputs(kind: Any, inputs: dict[str, torch.Tensor], mask_name: str = TEXT_MASK) -> list[str]:
    """The inputs laid out over the tokens of the text `mask_name` masks (its ids and mask, and the characters of
    each token): what removing a token changes. A second text or a concept set keeps its own."""
    return [name for name in inputs if mask_name in (kind.mask_of(name), kind.mask_of(name.replace(CHARACTERS, "")))]


def _pad_value(name: str, pad_token_id: int) -> int:
    return pad_token_id if name.endswith("input_ids") and CHARACTERS not in name else 0  # masks, characters: 0


def remove_units(
    kind: Any, inputs: dict[str, torch.Tensor], keep: torch.Tensor, pad_token_id: int, over: str = TEXT_MASK
) -> dict[str, torch.Tensor]:
    """`inputs` with only the units of `keep` (bool, the shape of `unit_mask(over, inputs)`) left: tokens of a
    text are removed (`remove_tokens`); a level's units (support instances, `(B, N, K)`) become all padding in
    place, which is how an episode says a shot is absent (its instance weight is then 0, Gao et al. 2019, eq. 8)."""
    spec = MaskSpec.parse(over)
    if spec.level is None:
        return remove_tokens(kind, inputs, keep, pad_token_id, spec.keys)
    removed = dict(inputs)
    for name in text_inputs(kind, inputs, spec.keys):
        tensor = inputs[name]
        kept = keep.reshape(*keep.shape, *([1] * (tensor.dim() - keep.dim()))).expand_as(tensor)
        removed[name] = tensor.masked_fill(~kept, _pad_value(name, pad_token_id))
    entities = spec.keys.replace("attention_mask", "entity_positions")
    if entities in inputs:  # an empty text's only entity index is 0
        removed[entities] = inputs[entities].masked_fill(~keep[..., None], 0)
    return removed


def remove_tokens(
    kind: Any, inputs: dict[str, torch.Tensor], keep: torch.Tensor, pad_token_id: int, mask_name: str = TEXT_MASK
) -> dict[str, torch.Tensor]:
    """`inputs` with only the tokens of `keep` (bool, the shape of the text's mask `(B, T)` or `(B, S, W)`) left in
    the text `mask_name` masks: the kept ones close up in their order (within each sentence of a document), the
    rest become padding (ids `pad_token_id`, masks and character ids 0). The text's entity positions (a relation's
    head and tail, `entity_positions` beside `attention_mask`) follow their tokens: each moves back by the tokens
    removed before it (a removed entity's position is then its next kept token's, or the last one's)."""
    keep = keep & inputs[mask_name].bool()
    axis = keep.dim() - 1
    order = torch.sort((~keep).to(torch.uint8), dim=axis, stable=True).indices  # kept positions first, in order
    positions = torch.arange(keep.shape[-1], device=keep.device)
    real = positions < keep.sum(axis, keepdim=True)  # after closing up, the first n of each row are kept tokens
    removed = dict(inputs)
    for name in text_inputs(kind, inputs, mask_name):
        tensor = inputs[name]
        extra = tensor.dim() - keep.dim()  # a character axis of each token
        index = order.reshape(*order.shape, *([1] * extra)).expand_as(tensor)
        moved = tensor.gather(axis, index)
        removed[name] = moved.masked_fill(
            ~real.reshape(*real.shape, *([1] * extra)).expand_as(tensor), _pad_value(name, pad_token_id)
        )
    entities = mask_name.replace("attention_mask", "entity_positions")
    if entities in inputs:  # (..., 2) indices into the text's last axis
        gone = (~keep & inputs[mask_name].bool()).long()
        before = gone.cumsum(axis) - gone  # removed tokens strictly before each position
        where = inputs[entities].clamp(0, keep.shape[-1] - 1)
        last = (keep.sum(axis, keepdim=True) - 1).clamp(min=0)  # a removed last token's entity: the new last one
        removed[entities] = torch.minimum(inputs[entities] - before.gather(axis, where), last)
    return removed


def ranking(importance: torch.Tensor, mask: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """The positions of each example's tokens (flattened over a document's sentences), most important first, padding
    last: `(B, N)` with N = T (or S·W). Ties go in a random order (`generator`), so a uniform map ranks at random."""
    flat = importance.reshape(len(importance), -1).float()
    real = mask.reshape(len(mask), -1).bool()
    shuffle = torch.rand(flat.shape, generator=generator).argsort(1).to(flat.device)  # a random order per row
    scores = flat.gather(1, shuffle).masked_fill(~real.gather(1, shuffle), float("-inf"))
    order = torch.sort(scores, dim=1, descending=True, stable=True).indices
    return shuffle.gather(1, order)


def top_tokens(order: torch.Tensor, counts: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """The keep-mask `shape` `(B, ...)` of each example's `counts[b]` first tokens of `order` `(B, N)`."""
    chosen = torch.arange(order.shape[1], device=order.device)[None, :] < counts[:, None]
    mask = torch.zeros(order.shape, dtype=torch.bool, device=order.device)
    return mask.scatter(1, order, chosen).reshape(shape)


def check_ks(ks: Sequence[float]) -> None:
    """Refuses erasure bins outside (0, 100] % of a text's tokens, naming `--k`."""
    if not ks or any(not 0 < k <= 100 for k in ks):
        raise ValueError(f"--k {' '.join(f'{k:g}' for k in ks)}: each k is a share of a text's tokens in (0, 100] %.")


def token_counts(mask: torch.Tensor, percent: float) -> torch.Tensor:
    """k% of each example's real tokens, at least one (none for an empty text): `(B,)`."""
    lengths = mask.reshape(len(mask), -1).sum(1)
    return torch.minimum(torch.clamp(torch.round(lengths * percent / 100), min=1), lengths).long()


@dataclass(frozen=True)
class Eraser:
    """What every erasure of one measurement shares: the model's scores of a batch of inputs (`score`: p(·|x),
    `(B, C)`), the head's input kind, the units removed (`over`, a mask spec: a text's tokens, or a level's units),
    the padding id, and how many variants run together (`batch_size`)."""

    score: Callable[[dict[str, torch.Tensor]], torch.Tensor]
    kind: Any
    pad_token_id: int
    batch_size: int
    over: str = TEXT_MASK

    def variant_scores(
        self, inputs: dict[str, torch.Tensor], examples: torch.Tensor, keeps: torch.Tensor
    ) -> torch.Tensor:
        """The scores `(V, C)` of V variants: example `examples[v]` of `inputs` keeping the tokens `keeps[v]`, run
        `batch_size` at a time (the erasures of an example share its batches)."""
        scores = []
        for start in range(0, len(examples), self.batch_size):
            chosen = examples[start : start + self.batch_size]
            batch = {name: tensor[chosen] for name, tensor in inputs.items()}
            keep = keeps[start : start + self.batch_size]
            scores.append(self.score(remove_units(self.kind, batch, keep, self.pad_token_id, self.over)))
        return torch.cat(scores) if scores else torch.empty(0)

    def leave_one_out(
        self, inputs: dict[str, torch.Tensor], predicted: torch.Tensor, full: torch.Tensor
    ) -> torch.Tensor:
        """Leave-one-out erasure (Li et al. 2016; Jain & Wallace 2019, §3): p(ŷ|x) − p(ŷ|x ∖ {t}) for every real
        token t, `(B, T)` (or `(B, S, W)`), 0 at padding; each example's T erasures in shared batches."""
        mask = unit_mask(self.over, inputs)
        flat = mask.reshape(len(mask), -1)
        examples, positions = flat.nonzero(as_tuple=True)
        keeps = flat[examples].clone()
        keeps[torch.arange(len(examples)), positions] = False
        scores = self.variant_scores(inputs, examples, keeps.reshape(-1, *mask.shape[1:]))
        drop = torch.zeros(flat.shape, dtype=torch.float32, device=mask.device)
        if len(examples):
            chosen = scores.gather(1, predicted[examples][:, None]).squeeze(1)
            drop[examples, positions] = full[examples] - chosen.float()
        return drop.reshape(mask.shape)

    def curves(
        self,
        inputs: dict[str, torch.Tensor],
        predicted: torch.Tensor,
        full: torch.Tensor,
        orders: dict[str, torch.Tensor],
        ks: Sequence[float],
    ) -> dict[str, dict[str, torch.Tensor]]:
        """For each ranking of `orders` (name -> `(B, N)`): `comprehensiveness` and `sufficiency` `(B, len(ks))`
        and `flip` `(B,)` (the top token removed changes the predicted class), every variant of a batch run
        together."""
        mask = unit_mask(self.over, inputs)
        count = len(mask)
        plans = []  # (ranking, what, k index, keep (B, ...))
        for name, order in orders.items():
            for index, percent in enumerate(ks):
                top = top_tokens(order, token_counts(mask, percent), mask.shape)
                plans += [(name, "comprehensiveness", index, mask & ~top), (name, "sufficiency", index, top)]
            plans.append((name, "flip", 0, mask & ~top_tokens(order, token_counts(mask, 0), mask.shape)))
        examples = torch.arange(count, device=mask.device).repeat(len(plans))
        scores = self.variant_scores(inputs, examples, torch.cat([keep for *_, keep in plans]))
        curves: dict[str, dict[str, torch.Tensor]] = {
            name: {"comprehensiveness": torch.zeros(count, len(ks)), "sufficiency": torch.zeros(count, len(ks))}
            for name in orders
        }
        for number, (name, what, index, _) in enumerate(plans):
            block = scores[number * count : (number + 1) * count].float().cpu()
            if what == "flip":
                curves[name]["flip"] = (block.argmax(-1) != predicted.cpu()).float()
            else:
                kept = block.gather(1, predicted.cpu()[:, None]).squeeze(1)
                curves[name][what][:, index] = full.cpu() - kept
        return curves
