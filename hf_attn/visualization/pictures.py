"""`visualize(model, tokenizer, text)`: finds the model's head in the registry and draws its attention with the
architecture's view (its own, or `views.generic_view`).

This module sits above the registry (it looks models up there); the views and the figure sit below it, so the model
folders' own views (`visualization_<name>.py`, which their registry rows name) can build on them.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from ..registry.table import Head
from ..tasks.heads import find_head, shape_of
from .figure import AttentionFigure
from .views import generic_view


def check_view_options(head: Head, pair: str | None, options: dict[str, Any]) -> None:
    """Refuses what `head`'s attention view cannot read, before a model is loaded (`hf-attn visualize` and `card`
    check a saved folder's head with it): a head without a picture, a second text (`pair`, `--pair`) for a head
    that reads no second text or target, and an option its view does not take (`support`, `entities`, ...), each
    named with what the head takes instead."""
    architecture, name = head.architecture, head.model_class.__name__
    view = architecture.attention_view or generic_view
    if not head.attention_fields and architecture.attention_view is None:
        raise ValueError(f"{name} returns no attention map to draw.")
    layout = shape_of(head).layout
    if pair is not None and "pair_column" not in layout.needs:
        raise ValueError(
            f"--pair (`pair`): {name} reads one text, not a pair; a second text is for pair models and a "
            "sequence-to-sequence model's target."
        )
    parameters = list(inspect.signature(view).parameters)[5:]  # after (model, head, tokenizer, text, pair)
    unknown = sorted(set(options) - set(parameters))
    if unknown:
        raise ValueError(
            f"{architecture.display_name}'s attention view ({name}) takes no option "
            f"{', '.join('--' + option for option in unknown)}; its options: "
            f"{', '.join('--' + option for option in parameters) or 'none'}."
        )


@torch.no_grad()
def visualize(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    text: str,
    pair: str | None = None,
    integrated_gradients: bool = False,
    **options: Any,
) -> AttentionFigure:
    """The attention maps of `model` (a head of a registered architecture) for `text` (and `pair`: a pair head's
    second text; a sequence-to-sequence head's target, read instead of its own output) as an `AttentionFigure`
    (`.to_html()`, `.save_png(path)`, shown by notebooks). `options` go to the architecture's own view (e.g.
    `support=` for the few-shot models, `top_k=` for AttentionXML, `heads="all"` for the Transformer).
    `integrated_gradients`: two more panels, the attention's importance of each token beside its Integrated
    Gradients attribution (`hf_attn.visualization.side_by_side`; Captum, the faithfulness extra)."""
    architecture, head = find_head(model)
    check_view_options(head, pair, options)
    if integrated_gradients:  # before the view runs: a head the panels cannot draw is named first
        from .side_by_side import check_side_by_side

        check_side_by_side(head)
    if not isinstance(text, str) or not text.strip():
        raise ValueError("`text` must be a non-empty string.")
    view = architecture.attention_view or generic_view
    was_training = model.training
    model.eval()
    try:
        panels, caption = view(model, head, tokenizer, text, pair, **options)
        if integrated_gradients:
            from .side_by_side import side_by_side_panels

            panels = [*panels, *side_by_side_panels(model, head, tokenizer, text, pair)]
    finally:
        model.train(was_training)
    return AttentionFigure(f"{architecture.display_name}: {text[:80]}", panels, caption)
