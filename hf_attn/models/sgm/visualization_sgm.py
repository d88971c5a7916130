"""SGM's attention picture (Yang et al. 2018, §2.2 and fig. 3): the labels the model emits, one row each, against
the source tokens: α_ti of eq. 3–4, the attention of the step that emitted label t.

The labels are those `generate()` emits with the model's generation settings (the repeat mask I_t of eq. 7
included), in emission order; the last row is the step that emitted EOS. The baseline head
(`SgmForMultiLabelClassification`, binary relevance) has no attention and no picture.
"""

from __future__ import annotations

from hf_attn.visualization.figure import HeatmapPanel
from hf_attn.visualization.views import decode_with_attentions, real_tokens


def sgm_view(model, head, tokenizer, text: str, pair: str | None = None) -> tuple[list[HeatmapPanel], str]:
    """Emitted labels × source tokens for `text`."""
    if not head.attention_fields:
        raise ValueError(f"{type(model).__name__} (binary relevance) has no attention to draw.")
    # each label at most once, then EOS: the bound when the generation settings set none
    bound = model.config.num_labels + 1
    inputs, sequence, output = decode_with_attentions(model, head, tokenizer, text, default_new_tokens=bound)
    config = model.config
    rows = []
    for token in sequence[1:].tolist():
        if token == config.eos_token_id:
            rows.append("EOS")
            break
        label = token - config.num_special_tokens
        rows.append(config.id2label.get(label, str(label)) if 0 <= label < config.num_labels else f"<{token}>")
    source = real_tokens(tokenizer, inputs, "attention_mask")
    weights = output.cross_attentions[0, : len(rows), : len(source)].float().cpu()
    panel = HeatmapPanel("attention of each emitted label over the source (α_ti)", weights.tolist(), rows, source)
    labels = ", ".join(model.decode_label_sets(sequence[None])[0]) or "none"
    return [panel], f"labels: {labels}; weights as the model computes them"
