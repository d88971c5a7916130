"""The figures' statistics (`hf_attn.faithfulness.statistics`): the 95% t-interval of a mean and Kendall's τ-b."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from hf_attn.faithfulness.statistics import estimate, kendall_tau


def test_an_estimate_is_the_mean_with_its_t_interval_over_the_finite_values():
    values = [0.2, 0.4, 0.9, 0.5, float("nan")]
    result = estimate(values)
    finite = np.array(values[:4])
    half = stats.t.ppf(0.975, 3) * finite.std(ddof=1) / 2
    assert result.n == 4 and math.isclose(result.mean, 0.5)
    assert math.isclose(result.low, 0.5 - half) and math.isclose(result.high, 0.5 + half)
    assert estimate([]).n == 0 and math.isnan(estimate([]).mean)
    one = estimate([0.3])
    assert one.mean == 0.3 and math.isnan(one.low)
    assert str(result) == f"0.500 [{result.low:.3f}, {result.high:.3f}]"


def test_kendall_tau_counts_order_and_is_undefined_without_it():
    assert kendall_tau(np.array([1.0, 2, 3]), np.array([10.0, 20, 30])) == 1.0
    assert kendall_tau(np.array([1.0, 2, 3]), np.array([3.0, 2, 1])) == -1.0
    assert math.isnan(kendall_tau(np.array([1.0]), np.array([2.0])))
    assert math.isnan(kendall_tau(np.array([0.5, 0.5, 0.5]), np.array([1.0, 2, 3])))  # a uniform map
