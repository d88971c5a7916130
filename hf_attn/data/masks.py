"""What the keys of an attention map are: a `MaskSpec` per attention field (`Architecture.attention_fields`, parsed
once by the row) says which input mask the keys follow, and computes the mask (`key_mask`):

      attention_mask                    keys = that mask's last axis
      attention_mask/sentences          keys = a document's sentences (one counts when any of its words does)
      support_attention_mask/instances  keys = a few-shot episode's support instances
      attention_mask/causal             (B, T, T): row t reads keys 0..t, a padded token's row is empty
      attention_mask@pair_attention_mask  (B, Q, K): rows are the second mask's tokens, keys the first's
      attention_mask/blocks             block self-attention maps (B, 2, m, r, r): m blocks of r tokens
      attention_mask/block_summaries    block-level maps (B, 2, m, m) over the blocks
      attention_mask#hops               (B, R, T): R distributions over the same keys, and what the R rows are
                                        (`ROW_MEANINGS`: hops of one attention, the config's labels, features)

Shape legend: B examples, T tokens, S sentences, R rows of a map of several distributions, m blocks of r tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["MASK_LEVELS", "ROW_MEANINGS", "MaskSpec"]

MASK_LEVELS = ("sentences", "instances", "causal", "blocks", "block_summaries")
# What the rows of a map with several distributions over the same keys are (`#<rows>`): each one's name in a picture
# ("hop 2"; `labels`: the config's label names), and whether their sum is a reading of its own (the paper's summed
# view of a multi-hop attention, Lin et al. 2017, fig. 2).
ROW_MEANINGS = {"hops": ("hop", True), "labels": ("label", False), "features": ("feature", False)}


@dataclass(frozen=True)
class MaskSpec:
    """The input mask the keys of one attention field follow (module docstring): `keys` names the mask, `level`
    what its keys are beyond tokens, `queries` the mask of the rows of a queries × keys map, `rows` what the rows of
    a map of several distributions are (`ROW_MEANINGS`)."""

    keys: str
    level: str | None = None
    queries: str | None = None
    rows: str | None = None

    @classmethod
    def parse(cls, spec: str | MaskSpec) -> MaskSpec:
        """`attention_mask`, `attention_mask/<level>` or `<keys>@<queries>`, each with an optional `#<rows>`; a
        ValueError names a malformed one."""
        if isinstance(spec, MaskSpec):
            return spec
        spec, hash_, rows = spec.partition("#")
        if hash_ and rows not in ROW_MEANINGS:
            raise ValueError(f"attention mask spec {spec!r}: unknown rows {rows!r}; known: {', '.join(ROW_MEANINGS)}")
        keys, at, queries = spec.partition("@")
        keys, slash, level = keys.partition("/")
        if not keys.endswith("attention_mask") or (at and not queries.endswith("attention_mask")):
            raise ValueError(f"attention mask spec {spec!r}: name an input mask (`...attention_mask`)")
        if slash and level not in MASK_LEVELS:
            raise ValueError(f"attention mask spec {spec!r}: unknown level {level!r}; known: {', '.join(MASK_LEVELS)}")
        if at and slash:
            raise ValueError(f"attention mask spec {spec!r}: a queries × keys map has no level")
        return cls(keys, level or None, queries or None, rows or None)

    @property
    def ids(self) -> str:
        """The input ids its keys are tokens of (`concept_attention_mask` -> `concept_input_ids`)."""
        return self.keys.replace("attention_mask", "input_ids")

    def key_mask(
        self, inputs: dict[str, torch.Tensor], shape: tuple[int, ...] | None = None, block_length: int | None = None
    ) -> torch.Tensor:
        """The boolean mask over the keys of a map of `shape` for these inputs. The block levels take m (and r, for
        `/blocks`) from the map's `shape`; `/block_summaries` takes r as `block_length`."""
        mask = inputs[self.keys].bool()
        if self.queries is not None:
            return inputs[self.queries].bool()[:, :, None] & mask[:, None, :]
        if self.level == "causal":
            prefix = torch.ones(mask.size(-1), mask.size(-1), dtype=torch.bool, device=mask.device).tril()
            return mask[:, :, None] & prefix
        if self.level in ("blocks", "block_summaries"):
            blocks = shape[2]
            block_length = shape[-1] if self.level == "blocks" else block_length
            padded = torch.zeros(mask.size(0), max(blocks * block_length, mask.size(1)), dtype=torch.bool)
            padded[:, : mask.size(1)] = mask
            units = padded[:, : blocks * block_length].view(mask.size(0), blocks, block_length)
            if self.level == "block_summaries":
                units = units.any(dim=-1)[:, None, :]  # (B, 1, m): one sequence of blocks
            positions = torch.arange(units.size(-1))
            before = positions[None, :] < positions[:, None]  # key j strictly before query i
            both = units[..., :, None] & units[..., None, :]  # (…, L, L)
            return torch.stack([both & before, both & before.T], dim=1).reshape(shape)
        return mask.any(dim=-1) if self.level in ("sentences", "instances") else mask
