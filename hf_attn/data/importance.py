"""One importance per input token, from a head's attention maps: what the faithfulness measures
(`hf_attn.faithfulness`) rank, erase and compare with gradients.

A head's maps are distributions over many things (hops, the sentences of a document, labels, blocks, a sequence's
own prefix); the question "which tokens did the model read?" needs one number per token of its (first) text. The
rule is read from the registry, as the pictures are (`hf_attn.visualization.views`):

- a map over the text's tokens (`attention_mask`): itself; a map of several rows over them (Lin's `#hops`,
  AttentionXML's `#labels`, BiBloSA's `#features`): their mean, each row a distribution (Lin et al. 2017, §2: the
  sentence embedding reads each hop alike);
- a document's word maps and its sentence map (`attention_mask` beside `attention_mask/sentences`: HAN, the
  BI-Attention's documents): a word's weight times its sentence's, α_it · α_i (Yang et al. 2016, eq. 6–10: the
  document vector is Σ_i α_i Σ_t α_it h_it, so this is the weight of h_it in it);
- queries × keys over the text (`<keys>@<queries>`, `/causal`: STCKA's self-attention, the LSTMN's tape): the
  attention each token receives, the mean of its column over the real query rows.

An architecture whose maps need another reading names its own rule in its registry row
(`Architecture.token_importance`, kept beside its view in the folder's `visualization_<name>.py`). A head with no
map over its text's tokens raises `NotImplementedError` naming it.

What is ranked is named by the row's `importance_over`, a mask spec as the attention fields' are
(`hf_attn.data.masks.MaskSpec`): the tokens of the text (`attention_mask`), of another input (STCKA's concepts,
`concept_attention_mask`), or a level's units of tokens (Proto-HATT's attention is over an episode's support
instances, `support_attention_mask/instances`: each instance is one unit, its weight α_j of Gao et al. 2019, eq. 8).

Shapes: B examples; T tokens of a text, or S sentences × W words of a document (the text's `attention_mask`); N × K
support instances; R rows of a map; Q query rows.
"""

from __future__ import annotations

from typing import Any

import torch

from .masks import MaskSpec

# The mask of a head's first (or only) text: what the importance is over unless its row names another input
# (`Architecture.importance_over`, which defaults to it).
TEXT_MASK = "attention_mask"


def importance_mask(head: Any) -> str:
    """The mask spec of the units the importance is over: the row's `importance_over` (STCKA's concepts,
    Proto-HATT's support instances), else the head's first text."""
    return head.architecture.importance_over


def ids_of(over: str) -> str:
    """The ids input of the units' mask (`attention_mask` -> `input_ids`, `concept_attention_mask` ->
    `concept_input_ids`, `support_attention_mask/instances` -> `support_input_ids`)."""
    return MaskSpec.parse(over).ids


def unit_mask(over: str, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
    """The boolean mask of the units ranked and erased: the tokens of the mask `over` names (`(B, T)`, `(B, S, W)`),
    or its level's units (support instances `(B, N, K)`: one counts when any of its tokens does)."""
    return MaskSpec.parse(over).key_mask(inputs)


def text_fields(head: Any) -> list[str]:
    """The head's attention fields whose keys are the tokens (or sentences) of the input `importance_mask` names,
    or, for a level's units, the fields over those units."""
    specs, over = head.architecture.attention_masks, MaskSpec.parse(importance_mask(head))
    return [
        field
        for field in head.attention_fields
        if specs[field].keys == over.keys and (over.level is None or specs[field].level == over.level)
    ]


def has_token_importance(head: Any) -> bool:
    """Whether the head's attention gives one importance per token of its text (`token_importance` answers)."""
    return head.architecture.token_importance is not None or bool(text_fields(head))


def _last_layer(value: Any) -> torch.Tensor:
    return value[-1] if isinstance(value, tuple) else value


def token_importance(head: Any, inputs: dict[str, torch.Tensor], output: Any) -> torch.Tensor:
    """The attention's importance of each token of the head's first text (or of the input its row names,
    `importance_mask`), in the shape of its mask (`(B, T)`, or `(B, S, W)` for documents), 0 at padding: the
    architecture's own rule (`Architecture.token_importance`), else the reading of its maps the module docstring
    gives."""
    own = head.architecture.token_importance
    importance = own(head, inputs, output) if own is not None else _read_maps(head, inputs, output)
    mask = unit_mask(importance_mask(head), inputs)
    return importance.float().reshape(mask.shape) * mask.to(importance.device).float()


def _read_maps(head: Any, inputs: dict[str, torch.Tensor], output: Any) -> torch.Tensor:
    specs = head.architecture.attention_masks
    fields = text_fields(head)
    if not fields:
        raise NotImplementedError(
            f"{head.model_class.__name__}'s attention has no map over the tokens of its text "
            f"({', '.join(head.attention_fields) or 'no attention fields'}): it gives no importance per token."
        )
    maps = {field: _last_layer(getattr(output, field)) for field in fields}
    over = MaskSpec.parse(importance_mask(head))
    mask = over.key_mask(inputs).to(next(iter(maps.values())).device).float()
    # A map over the units themselves: the text's tokens, or a level's units (support instances, `(B, 1, N, K)`
    # for an episode of one query: its row).
    plain = [field for field in fields if specs[field].level == over.level and specs[field].queries is None]
    sentences = [field for field in fields if specs[field].level == "sentences"]
    if plain and sentences and mask.dim() == 3:  # α_it · α_i: (B, S, W) · (B, S, 1)
        return maps[plain[0]].float() * maps[sentences[0]].float()[..., None]
    if plain:
        weights = maps[plain[0]].float()
        return weights.mean(1) if weights.dim() == mask.dim() + 1 else weights  # (B, R, T) -> (B, T)
    read = [field for field in fields if specs[field].queries is not None or specs[field].level == "causal"]
    if read and mask.dim() == 2:
        weights = maps[read[0]].float()  # (B, Q, T): a padded query's row is all 0
        rows = (weights.sum(-1) > 0).sum(-1).clamp(min=1)  # (B,) the real query rows
        return weights.sum(1) / rows[:, None]  # (B, T): the mean attention each token receives
    raise NotImplementedError(
        f"{head.model_class.__name__}'s maps over its text ({', '.join(fields)}) need a reading of their own: its "
        "registry row names none (Architecture.token_importance)."
    )
