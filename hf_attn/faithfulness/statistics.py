"""The figures' statistics: Kendall's τ between two rankings of a text's tokens (scipy's τ-b, which counts ties as
neither agreeing nor disagreeing), and a mean over examples with its 95% confidence interval (Student's t)."""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class Estimate:
    """A mean over `n` examples and its 95% confidence interval [`low`, `high`] (NaN where `n` < 2)."""

    mean: float
    low: float
    high: float
    n: int

    def as_dict(self) -> dict[str, float | int]:
        return {key: (round(value, 4) if isinstance(value, float) else value) for key, value in asdict(self).items()}

    def __str__(self) -> str:
        return f"{self.mean:.3f} [{self.low:.3f}, {self.high:.3f}]"


def estimate(values: np.ndarray | list[float]) -> Estimate:
    """The mean of the finite `values` and its 95% t-interval: mean ± t₀.₉₇₅(n−1) · s / √n."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    n = int(values.size)
    if n == 0:
        return Estimate(math.nan, math.nan, math.nan, 0)
    mean = float(values.mean())
    if n < 2:
        return Estimate(mean, math.nan, math.nan, n)
    half = float(stats.t.ppf(0.975, n - 1) * values.std(ddof=1) / math.sqrt(n))
    return Estimate(mean, mean - half, mean + half, n)


def kendall_tau(first: np.ndarray, second: np.ndarray) -> float:
    """Kendall's τ-b between two scorings of the same tokens; NaN for fewer than two tokens or a constant scoring."""
    if len(first) < 2:
        return math.nan
    with warnings.catch_warnings(), np.errstate(invalid="ignore"):
        warnings.simplefilter("ignore", stats.ConstantInputWarning)  # a uniform map: τ is undefined, NaN
        tau = stats.kendalltau(first, second).statistic
    return float(tau)
