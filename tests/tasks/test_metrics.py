"""Extreme multi-label ranking metrics on hand-made cases: P@k, nDCG@k, PSP@k with Jain et al.'s propensities."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hf_attn.tasks.metrics import jain_propensities, ranking_metrics

# Two examples, five labels. Ranking of example 0: labels 2, 0, 4, 1, 3 (gold {0, 3}); of example 1: 1, 0, 2, 3, 4
# (gold {1}).
SCORES = np.array([[0.8, 0.2, 0.9, 0.1, 0.5], [0.3, 0.7, 0.2, 0.1, 0.0]])
GOLD = np.array([[1, 0, 0, 1, 0], [0, 1, 0, 0, 0]])


def test_precision_and_ndcg_at_k_by_hand():
    metrics = ranking_metrics(SCORES, GOLD, ks=(1, 3, 5))
    assert metrics["precision_at_1"] == pytest.approx((0 + 1) / 2)
    assert metrics["precision_at_3"] == pytest.approx((1 / 3 + 1 / 3) / 2)
    assert metrics["precision_at_5"] == pytest.approx((2 / 5 + 1 / 5) / 2)
    # Example 0: hits at ranks 2 and 5 -> DCG@3 = 1/log2(3), IDCG@3 = 1 + 1/log2(3); example 1: a hit at rank 1.
    ndcg_3 = ((1 / math.log2(3)) / (1 + 1 / math.log2(3)) + 1.0) / 2
    assert metrics["ndcg_at_3"] == pytest.approx(ndcg_3)
    ndcg_5 = ((1 / math.log2(3) + 1 / math.log2(6)) / (1 + 1 / math.log2(3)) + 1.0) / 2
    assert metrics["ndcg_at_5"] == pytest.approx(ndcg_5)
    assert metrics["ndcg_at_1"] == pytest.approx(0.5)


def test_propensity_scored_precision_by_hand():
    propensities = np.array([0.5, 0.9, 0.8, 0.25, 0.7])  # label 3 is the rare one
    metrics = ranking_metrics(SCORES, GOLD, ks=(1, 3), propensities=propensities)
    # @1: only example 1's hit (label 1, 1/0.9); the best: label 3 (1/0.25) and label 1 (1/0.9).
    assert metrics["psp_at_1"] == pytest.approx((1 / 0.9) / (1 / 0.25 + 1 / 0.9))
    # @3: hits label 0 (1/0.5) and label 1; the best: labels 3 and 0, and label 1.
    assert metrics["psp_at_3"] == pytest.approx((1 / 0.5 + 1 / 0.9) / (1 / 0.25 + 1 / 0.5 + 1 / 0.9))


def test_an_example_without_labels_scores_zero_and_never_nan():
    gold = np.array([[0, 0, 0, 0, 0], [0, 1, 0, 0, 0]])
    metrics = ranking_metrics(SCORES, gold, ks=(1, 5), propensities=np.full(5, 0.5))
    assert not any(math.isnan(value) for value in metrics.values())
    assert metrics["precision_at_1"] == 0.5 and metrics["ndcg_at_1"] == 0.5 and metrics["psp_at_1"] == 1.0
    empty = ranking_metrics(SCORES, np.zeros_like(GOLD), ks=(1,), propensities=np.full(5, 0.5))
    assert empty == {"precision_at_1": 0.0, "ndcg_at_1": 0.0, "psp_at_1": 0.0}
    assert "precision_at_10" not in ranking_metrics(SCORES, GOLD, ks=(10,))  # k beyond the label count: skipped


def test_jain_propensities_follow_their_formula_and_grow_with_frequency():
    counts, n = np.array([0, 1, 10, 1000]), 5000
    c = (math.log(n) - 1) * 2.5**0.55
    expected = [1 / (1 + c * (count + 1.5) ** -0.55) for count in counts]
    np.testing.assert_allclose(jain_propensities(counts, n), expected)
    assert np.all(np.diff(jain_propensities(counts, n)) > 0)
    assert jain_propensities(counts, n, a=0.6, b=2.6)[0] != expected[0]


def test_batch_by_batch_metrics_equal_the_whole_set_and_work_as_trainer_batch_metrics():
    """`RankingMetrics` accumulates batches (`Trainer(batch_eval_metrics=True)` calls it per batch with
    `compute_result` on the last): the result is that of the whole set at once; it resets for the next evaluation.
    Reference entries of −100 (left out) are not relevant."""
    import torch
    from transformers import EvalPrediction

    from hf_attn.tasks.metrics import RankingMetrics, label_propensities

    rng = np.random.default_rng(0)
    scores, gold = rng.normal(size=(9, 7)), rng.random((9, 7)) < 0.3
    propensities = label_propensities([np.flatnonzero(row).tolist() for row in gold], 7)
    whole = ranking_metrics(scores, gold, propensities=propensities)
    metrics = RankingMetrics(propensities=propensities)
    for start, stop in ((0, 4), (4, 5), (5, 9)):
        labels = torch.tensor(np.where(gold[start:stop], 1.0, 0.0))
        labels[labels == 0] = -100.0 if start == 4 else 0.0  # −100 reads as "not relevant"
        partial = metrics(EvalPrediction(torch.tensor(scores[start:stop]), labels), compute_result=stop == 9)
        if stop < 9:
            assert partial == {}  # a result only on the last batch
    assert set(partial) == set(whole) and partial == pytest.approx(whole)
    assert metrics.compute() == {}  # reset after the result
