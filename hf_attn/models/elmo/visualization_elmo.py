"""ELMo's picture (Peters et al. 2018, eq. 1 of §3.2): ELMo has no attention; what a task learned is how it mixes the
biLM's layers, ELMo_k^task = γ^task Σ_j s_j^task h_kj. The picture shows the task's s^task = softmax(w) over the
L + 1 layers (layer 0: the character CNN's token representation; 1 … L: the LSTM layers) as one row, γ in its
label. The mix is a parameter, the same for every text; the text gives the caption its prediction. The biLM head
(`ElmoForBidirectionalLanguageModeling`) learns no mix and has no picture.
"""

from __future__ import annotations

import torch

from hf_attn.data.kinds import CLASS
from hf_attn.models.elmo.tokenization_elmo import BOS_TOKEN, EOS_TOKEN
from hf_attn.visualization.figure import HeatmapPanel
from hf_attn.visualization.views import encode, prediction_caption


def scalar_mix_view(model, head, tokenizer, text: str, pair: str | None = None) -> tuple[list[HeatmapPanel], str]:
    """The task head's scalar-mix weights s^task (and γ^task), with its prediction for `text`."""
    mix = getattr(model, "scalar_mix", None)
    if mix is None:
        raise ValueError(f"{type(model).__name__} learns no scalar mix (a task head does): nothing to draw.")
    weights = torch.softmax(mix.scalar_weights.detach().float(), dim=0).cpu()
    layers = ["layer 0 (char CNN)", *(f"layer {index} (LSTM)" for index in range(1, weights.numel()))]
    gamma = float(mix.gamma.detach())
    title = f"scalar-mix weights s_j of {type(model).__name__}'s task (eq. 1)"
    panel = HeatmapPanel(title, [weights.tolist()], [f"s (γ = {gamma:.3f})"], layers)
    inputs = {name: tensor.to(model.device) for name, tensor in encode(head, tokenizer, text, None).items()}
    logits = model(**inputs).logits
    if head.labels is CLASS:
        return [panel], prediction_caption(model, logits)
    words = tokenizer.sentence_tokens(text)
    tags = [model.config.id2label.get(int(index), str(int(index))) for index in logits[0].argmax(-1).tolist()]
    tagged = " ".join(
        f"{word}/{tag}" for word, tag in zip(words, tags, strict=False) if word not in (BOS_TOKEN, EOS_TOKEN)
    )
    return [panel], f"tags: {tagged}"
