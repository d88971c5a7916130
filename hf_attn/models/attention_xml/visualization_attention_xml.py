"""AttentionXML's picture (You et al. 2019, §2.1.4, eq. 2): its attention is per label, one distribution over the
text's tokens for each of the L labels; the picture keeps the top k labels by the model's score (probability, or
path probability with the label tree), best first, one row each, the score in the row's label.
"""

from __future__ import annotations

from hf_attn.visualization.figure import HeatmapPanel
from hf_attn.visualization.views import encode, real_tokens

from .kinds import LABEL_TREE


def top_labels_view(
    model, head, tokenizer, text: str, pair: str | None = None, top_k: int = 5
) -> tuple[list[HeatmapPanel], str]:
    """The `top_k` labels' attention over `text`'s tokens."""
    if top_k < 1:
        raise ValueError(f"`top_k` must be at least 1, got {top_k}.")
    inputs = {name: tensor.to(model.device) for name, tensor in encode(head, tokenizer, text, None).items()}
    tokens = real_tokens(tokenizer, {name: tensor.cpu() for name, tensor in inputs.items()}, "attention_mask")
    names = model.config.id2label
    if head.labels is LABEL_TREE:  # the beam's last level scored `candidates`; their maps are its rows
        output = model(**inputs, top_k=top_k)
        labels, scores = output.top_labels[0].tolist(), output.top_scores[0].float().tolist()
        candidates = output.candidates[0].tolist()
        rows = [candidates.index(label) for label in labels]
        how = "path probability"
    else:
        output = model(**inputs)
        probabilities = output.logits[0].float().sigmoid()
        top = probabilities.topk(min(top_k, probabilities.numel()))
        labels, scores, rows = top.indices.tolist(), top.values.tolist(), top.indices.tolist()
        how = "probability"
    weights = output.label_attentions[0, rows, : len(tokens)].float().cpu()
    row_labels = [f"{names.get(label, str(label))} ({score:.3f})" for label, score in zip(labels, scores, strict=True)]
    panel = HeatmapPanel(
        f"attention of the top {len(rows)} labels over the text", weights.tolist(), row_labels, tokens
    )
    return [panel], f"labels by {how}, best first; weights as the model computes them"
