"""The erasure curves of a `FaithfulnessReport` as a PNG (matplotlib: comprehensiveness and sufficiency against k
for each ranking, the 95% interval shaded, as ERASER's figures plot them). The attention beside Integrated Gradients
for one text is a picture of `hf_attn.visualization.side_by_side`."""

from __future__ import annotations

from pathlib import Path

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
