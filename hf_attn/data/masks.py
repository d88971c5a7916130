"""What the keys of an attention map are: a `MaskSpec` per attention field (`Architecture.attention_fields`, parsed
once by the row) says which input mask the keys follow, and computes the mask (`key_mask`):

      attention_mask                    keys = that mask's last axis
      attention_mask/sentences          keys = a document's sentences (one counts when any of its words does)
      support_attention_mask/instances  keys = a few-shot episode's support instances
      attention_mask/causal             (B, T, T): row t reads keys 0..t, a padded token's row is empty
      attention_mask@pair_attention_mask  (B, Q, K): rows are the second mask's tokens, keys the first's
      attention_mask/<level>            a level an architecture registers (`register_mask_level`, from its folder's
                                        kinds.py: BiBloSA's `/blocks` and `/block_summaries`)
      attention_mask#hops               (B, R, T): R distributions over the same keys, and what the R rows are
                                        (`ROW_MEANINGS`: hops of one attention, the config's labels, features)

A level is a `MaskLevel` object registered by name: its `key_mask` builds the keys' mask from the input mask and the
map's shape, and, where its keys need the size of another map of the same input (`sized_by`: the blocks of
`/block_summaries` are as long as the `/blocks` maps' last axis), `level_sizes` finds it among a head's maps.

Shape legend: B examples, T tokens, S sentences, R rows of a map of several distributions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

__all__ = ["MASK_LEVELS", "ROW_MEANINGS", "MaskLevel", "MaskSpec", "level_sizes", "register_mask_level"]


class MaskLevel:
    """What the keys of a map are beyond tokens (`<keys>/<level>`, module docstring). Subclasses set `name` and
    build the keys' mask."""

    name: ClassVar[str]
    # The level of the same input's map whose last axis this level's keys need (`level_sizes`), or None.
    sized_by: ClassVar[str | None] = None

    def key_mask(self, mask: torch.Tensor, shape: tuple[int, ...] | None, size: int | None) -> torch.Tensor:
        """The boolean mask over the keys of a map of `shape`, from the input mask `mask` (and `size`, the last axis
        of the `sized_by` map)."""
        raise NotImplementedError


class Sentences(MaskLevel):
    """Keys that are units of tokens (a document's sentences, an episode's support instances): one counts when any
    of its tokens does."""

    name = "sentences"

    def key_mask(self, mask, shape, size):
        return mask.any(dim=-1)


class Instances(Sentences):
    name = "instances"


class Causal(MaskLevel):
    """`(B, T, T)`: row t reads keys 0..t, and a padded token's row is empty."""

    name = "causal"

    def key_mask(self, mask, shape, size):
        prefix = torch.ones(mask.size(-1), mask.size(-1), dtype=torch.bool, device=mask.device).tril()
        return mask[:, :, None] & prefix


MASK_LEVELS: dict[str, MaskLevel] = {}


def register_mask_level(level: MaskLevel) -> MaskLevel:
    """Registers `level` under its name (again: replaced); returns it."""
    MASK_LEVELS[level.name] = level
    return level


SENTENCES = register_mask_level(Sentences())
INSTANCES = register_mask_level(Instances())
CAUSAL = register_mask_level(Causal())

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
        self, inputs: dict[str, torch.Tensor], shape: tuple[int, ...] | None = None, size: int | None = None
    ) -> torch.Tensor:
        """The boolean mask over the keys of a map of `shape` for these inputs (`size`: what its level's `sized_by`
        map gives, `level_sizes`)."""
        mask = inputs[self.keys].bool()
        if self.queries is not None:
            return inputs[self.queries].bool()[:, :, None] & mask[:, None, :]
        return mask if self.level is None else MASK_LEVELS[self.level].key_mask(mask, shape, size)


def level_sizes(specs: dict[str, MaskSpec], maps: dict[str, torch.Tensor]) -> dict[str, int | None]:
    """Each field's `size` for `MaskSpec.key_mask`: the last axis of the map, among `maps` (the head's, by field),
    over the same keys at its level's `sized_by` level; `None` where its level needs none."""
    sizes = {(specs[field].keys, specs[field].level): value.shape[-1] for field, value in maps.items()}
    by = {field: MASK_LEVELS[spec.level].sized_by if spec.level else None for field, spec in specs.items()}
    return {field: sizes.get((spec.keys, by[field])) if by[field] else None for field, spec in specs.items()}
