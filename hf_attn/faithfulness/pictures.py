"""Pictures of faithfulness: the erasure curves of a `FaithfulnessReport` as a PNG (matplotlib: comprehensiveness
and sufficiency against k for each ranking, the 95% interval shaded, as ERASER's figures plot them), and the
attention beside Integrated Gradients for one text (`side_by_side_panels`, which `visualize(...,
integrated_gradients=True)` adds to its figure)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .measure import RANKINGS, FaithfulnessReport

COLOURS = {"attention": "#c0392b", "integrated_gradients": "#2471a3", "random": "#7f8c8d"}


def erasure_curves_png(report: FaithfulnessReport, path: str | Path, title: str = "erasure") -> Path:
    """Draws comprehensiveness (left: higher is more faithful) and sufficiency (right: lower is) at each k, one line
    per ranking with its interval, to the PNG `path`; returns it."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(9, 3.6), constrained_layout=True)
    for axis, what in zip(axes, ("comprehensiveness", "sufficiency"), strict=True):
        for name in RANKINGS:
            estimates = getattr(report, what)[name]
            means = [e.mean for e in estimates]
            axis.plot(report.ks, means, marker="o", color=COLOURS[name], label=name.replace("_", " "))
            axis.fill_between(
                report.ks, [e.low for e in estimates], [e.high for e in estimates], color=COLOURS[name], alpha=0.15
            )
        axis.set_xscale("log")
        axis.set_xticks(report.ks, [f"{k:g}%" for k in report.ks])
        axis.set_xlabel("k: share of the tokens, ranked by each method")
        axis.set_title(f"{what} (AOPC attention {report.aopc[what]['attention'].mean:.3f})")
        axis.axhline(0, color="black", linewidth=0.5)
    axes[0].set_ylabel("p(ŷ|x) − p(ŷ|x with tokens erased)")
    axes[0].legend(fontsize=8)
    figure.suptitle(f"{title} ({report.examples} examples, 95% intervals)")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def check_side_by_side(head: Any) -> None:
    """Refuses, naming `integrated_gradients`, a head whose attention the two panels cannot set beside its
    attribution: one `check_measurable` refuses, or a few-shot head (its query is read against a support set the
    view builds; `hf-attn faithfulness` measures it)."""
    from ..data.kinds import EpisodeLabels
    from .measure import check_measurable

    check_measurable(head)
    if isinstance(head.labels, EpisodeLabels):
        raise ValueError(
            f"integrated_gradients: {head.model_class.__name__} reads its query against a support set, which the "
            "side-by-side panels do not draw; measure it with hf-attn faithfulness."
        )


def side_by_side_panels(model: Any, head: Any, tokenizer: Any, text: str, pair: str | None = None) -> list:
    """Two panels over the same tokens of `text`: the attention's importance of each (`token_importance`) and its
    Integrated Gradients attribution toward the predicted class (shaded by its positive part; a negative attribution
    argues against the class and is left white), for the picture to set them side by side."""
    import torch

    from ..visualization.figure import TextPanel
    from ..visualization.importance import importance_mask, token_importance
    from ..visualization.views import encode, real_tokens
    from .attribution import integrated_gradients
    from .measure import probabilities_of

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
