"""STCKA's picture (Chen et al. 2019, §3.4): the maps it returns, drawn as every head's are (the concepts shaded by
a (eq. 5), α (C-ST, eq. 3) and β (C-CS, eq. 4); the self-attention over the words), and the soft switch γ of eq. 6
per concept, which mixes α and β into a. γ is a gate in [0, 1], not a distribution: its panel's scale is 0 to 1.
"""

from __future__ import annotations

from hf_attn.visualization.figure import TextPanel
from hf_attn.visualization.views import encode, maps_panels, prediction_caption, real_tokens


def stcka_view(model, head, tokenizer, text: str, pair: str | None = None) -> tuple[list, str]:
    """The panels of the attention maps (as the generic view draws them), then γ per concept."""
    inputs = encode(head, tokenizer, text, None)
    output = model(**{name: tensor.to(model.device) for name, tensor in inputs.items()})
    panels = maps_panels(model, head, tokenizer, inputs, output)
    concepts = real_tokens(tokenizer, inputs, "concept_attention_mask")
    gamma = output.gamma[0].float().cpu()[inputs["concept_attention_mask"][0].bool()]
    title = "γ per concept: the switch between α (γ → 1) and β (eq. 6)"
    panels.append(TextPanel(title, concepts, gamma.tolist(), 1.0))
    return panels, f"{prediction_caption(model, output.logits)}; weights as the model computes them"
