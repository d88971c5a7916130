"""The attention beside Integrated Gradients for one text: two panels, the attention's importance of each token
(`hf_attn.data.importance`) and its attribution (`hf_attn.faithfulness.attribution`), which `visualize(...,
integrated_gradients=True)` adds to its figure (Captum, the faithfulness extra)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

    from ..registry.row import Head


def check_side_by_side(head: Head) -> None:
    """Refuses, naming `integrated_gradients`, a head whose attention the two panels cannot set beside its
    attribution: one `check_measurable` refuses, or a few-shot head (its query is read against a support set the
    view builds; `hf-attn faithfulness` measures it)."""
    from ..data.kinds import EpisodeLabels
    from ..faithfulness.measure import check_measurable

    check_measurable(head)
    if isinstance(head.labels, EpisodeLabels):
        raise ValueError(
            f"integrated_gradients: {head.model_class.__name__} reads its query against a support set, which the "
            "side-by-side panels do not draw; measure it with hf-attn faithfulness."
        )


def side_by_side_panels(
    model: PreTrainedModel, head: Head, tokenizer: PreTrainedTokenizerBase, text: str, pair: str | None = None
) -> list:
    """Two panels over the same tokens of `text`: the attention's importance of each (`token_importance`) and its
    Integrated Gradients attribution toward the predicted class (shaded by its positive part; a negative attribution
    argues against the class and is left white), for the picture to set them side by side."""
    import torch

    from ..data.importance import importance_mask, token_importance
    from ..faithfulness.attribution import integrated_gradients
    from ..faithfulness.measure import probabilities_of
    from .figure import TextPanel
    from .views import encode, real_tokens

    check_side_by_side(head)
    inputs = {name: tensor.to(model.device) for name, tensor in encode(head, tokenizer, text, pair).items()}
    probability = probabilities_of(head)
    with torch.no_grad():
        output = model(**inputs, **head.attention_kwargs)
    predicted = probability(output).argmax(-1)
    attention = token_importance(head, inputs, output)
    over = importance_mask(head)
    attribution, delta = integrated_gradients(
        lambda batch: probability(model(**batch)),
        model,
        inputs,
        predicted,
        mask_name=over,
    )
    tokens = real_tokens(tokenizer, inputs, over)
    words = [word for sentence in tokens for word in sentence] if tokens and isinstance(tokens[0], list) else tokens
    real = inputs[over][0].reshape(-1).bool().cpu()
    return [
        TextPanel("attention, one importance per token", words, attention[0].reshape(-1)[real].tolist()),
        TextPanel(
            f"Integrated Gradients toward the prediction (delta {float(delta[0]):+.3f})",
            words,
            attribution[0].reshape(-1)[real].clamp(min=0).tolist(),
        ),
    ]
