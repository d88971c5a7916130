"""Metrics: accuracy, multi-label set metrics, extreme multi-label ranking metrics (P@k, nDCG@k, PSP@k), BLEU, and
how well attention lands on known evidence. The task shapes hand them to `Trainer` as `compute_metrics`; the passes
that run a trained model to score it beyond them are `hf_attn.tasks.scoring`'s."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch
from transformers import EvalPrediction, PreTrainedConfig, PreTrainedTokenizerBase

from ..layers.sequences import label_ids_of_sequence

# The names the scores below report, which the task shapes list among their `reported_metrics`: attention on the
# evidence (`score_evidence_attention`, `word_attention_on_evidence`) and the ranking of label sets (`RankingMetrics`
# with its default ks).
EVIDENCE_METRICS = ("hit_rate", "evidence_mass", "best_hop_evidence_mass", "evidence_mass_uniform")
RANKING_METRICS = tuple(f"{metric}_at_{k}" for metric in ("precision", "ndcg", "psp") for k in (1, 3, 5))


def accuracy_metric(prediction: EvalPrediction) -> dict[str, float]:
    """`compute_metrics` for `Trainer`: accuracy of the argmax of the logits over the labelled examples (label
    -100 marks an unlabelled one)."""
    logits = prediction.predictions[0] if isinstance(prediction.predictions, tuple) else prediction.predictions
    labelled = prediction.label_ids != -100
    correct = np.argmax(logits, axis=-1)[labelled] == prediction.label_ids[labelled]
    return {"accuracy": float(correct.mean()) if correct.size else float("nan")}


def evidence_attention_scores(attentions: torch.Tensor, evidence_index: torch.Tensor) -> dict[str, float]:
    """Scores hop attentions `(B, R, T)` against the evidence token of each example (`(B,)`; -1 = none, skipped).

    Returns:
        hit_rate: fraction of examples where the evidence is the argmax of at least one hop.
        evidence_mass: mean over examples and hops of the attention weight on the evidence.
        best_hop_evidence_mass: mean over examples of the largest weight any hop puts on the evidence.
    """
    keep = evidence_index >= 0
    attentions, evidence_index = attentions[keep], evidence_index[keep]
    if attentions.numel() == 0:
        return {"hit_rate": float("nan"), "evidence_mass": float("nan"), "best_hop_evidence_mass": float("nan")}
    index = evidence_index[:, None, None].expand(-1, attentions.size(1), 1)
    mass = attentions.gather(-1, index).squeeze(-1)  # (B, R)
    hits = (attentions.argmax(dim=-1) == evidence_index[:, None]).any(dim=-1)
    return {
        "hit_rate": hits.float().mean().item(),
        "evidence_mass": mass.mean().item(),
        "best_hop_evidence_mass": mass.max(dim=-1).values.mean().item(),
    }


def translation_metrics(tokenizer: PreTrainedTokenizerBase) -> Callable[[EvalPrediction], dict[str, float]]:
    """`compute_metrics` for `Seq2SeqTrainer(predict_with_generate=True)`: corpus BLEU (sacrebleu) and the
    fraction of sentences generated exactly right."""
    import sacrebleu

    def compute(prediction: EvalPrediction) -> dict[str, float]:
        generated = np.where(prediction.predictions < 0, tokenizer.pad_token_id, prediction.predictions)
        references = np.where(prediction.label_ids < 0, tokenizer.pad_token_id, prediction.label_ids)
        hypotheses = tokenizer.batch_decode(generated, skip_special_tokens=True)
        targets = tokenizer.batch_decode(references, skip_special_tokens=True)
        exact = float(np.mean([h.strip() == t.strip() for h, t in zip(hypotheses, targets, strict=True)]))
        return {"bleu": sacrebleu.corpus_bleu(hypotheses, [targets]).score, "exact_match": exact}

    return compute


def multi_label_metrics(predicted: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    """Set metrics of multi-hot predictions against multi-hot references, both `(n, N)` of 0/1.

    Returns hamming_loss (the fraction of wrong label decisions; lower is better), micro_f1 (with
    micro_precision, micro_recall: counts pooled over labels), macro_f1 (the mean of per-label F1; a label never
    predicted nor present scores 0, as scikit-learn's default) and subset_accuracy (the fraction of exactly right
    sets).
    """
    predicted, gold = np.asarray(predicted).astype(bool), np.asarray(gold).astype(bool)
    if predicted.shape != gold.shape:
        raise ValueError(f"predictions {predicted.shape} and references {gold.shape} differ in shape.")
    true_positive = (predicted & gold).sum(axis=0).astype(float)
    false_positive = (predicted & ~gold).sum(axis=0).astype(float)
    false_negative = (~predicted & gold).sum(axis=0).astype(float)

    def ratio(numerator: float | np.ndarray, denominator: float | np.ndarray) -> float | np.ndarray:
        numerator = np.asarray(numerator, dtype=float)
        return np.divide(numerator, denominator, out=np.zeros_like(numerator), where=np.asarray(denominator) > 0)

    tp, fp, fn = true_positive.sum(), false_positive.sum(), false_negative.sum()
    per_label_f1 = ratio(2 * true_positive, 2 * true_positive + false_positive + false_negative)
    return {
        "hamming_loss": float((predicted != gold).mean()) if gold.size else float("nan"),
        "micro_f1": float(ratio(2 * tp, 2 * tp + fp + fn)),
        "micro_precision": float(ratio(tp, tp + fp)),
        "micro_recall": float(ratio(tp, tp + fn)),
        "macro_f1": float(per_label_f1.mean()) if per_label_f1.size else float("nan"),
        "subset_accuracy": float((predicted == gold).all(axis=1).mean()) if gold.size else float("nan"),
    }


def label_sequences_to_multi_hot(sequences: np.ndarray, config: PreTrainedConfig) -> np.ndarray:
    """Target-id sequences of a label-sequence model (generated, or references with -100 padding) → `(n, N)`
    multi-hot: the labels before the first EOS (see `label_ids_of_sequence`)."""
    multi_hot = np.zeros((len(sequences), config.num_labels), dtype=bool)
    for row, sequence in enumerate(np.asarray(sequences).tolist()):
        multi_hot[row, label_ids_of_sequence(sequence, config)] = True
    return multi_hot


def label_sequence_metrics(config: PreTrainedConfig) -> Callable[[EvalPrediction], dict[str, float]]:
    """`compute_metrics` for `Seq2SeqTrainer(predict_with_generate=True)` on a label-sequence model (SGM): decodes
    generated and reference sequences into label sets and scores them with `multi_label_metrics`."""

    def compute(prediction: EvalPrediction) -> dict[str, float]:
        generated = prediction.predictions[0] if isinstance(prediction.predictions, tuple) else prediction.predictions
        return multi_label_metrics(
            label_sequences_to_multi_hot(generated, config), label_sequences_to_multi_hot(prediction.label_ids, config)
        )

    return compute


def jain_propensities(label_counts: np.ndarray, num_examples: int, a: float = 0.55, b: float = 1.5) -> np.ndarray:
    """Propensity p_l of each label from its training frequency N_l (Jain, Prabhu, Varma, KDD 2016, eq. 2):
    p_l = 1 / (1 + C · (N_l + B)^−A), C = (log N − 1) · (B + 1)^A, with N the number of training examples. The
    defaults A = 0.55, B = 1.5 are the paper's for most datasets (Amazon: 0.6, 2.6; Wikipedia: 0.5, 0.4)."""
    counts = np.asarray(label_counts, dtype=float)
    c = (np.log(num_examples) - 1.0) * (b + 1.0) ** a
    return 1.0 / (1.0 + c * (counts + b) ** -a)


class RankingMetrics:
    """Extreme multi-label ranking metrics of label scores `(n, N)` against multi-hot references `(n, N)`, averaged
    over the n examples, for each k of `ks` (k ≤ N), accumulated batch by batch (`update`, then `compute`):

    - P@k = (1/k) Σ_{r ≤ k} y_(r), y_(r) the reference of the r-th best scored label;
    - nDCG@k = DCG@k / IDCG@k, DCG@k = Σ_{r ≤ k} y_(r) / log2(r + 1), IDCG@k the DCG of a perfect ranking
      (Σ_{r ≤ min(k, |y|)} 1 / log2(r + 1));
    - PSP@k (with `propensities` p_l, see `jain_propensities`) = Σ_examples Σ_{r ≤ k} y_(r) / p_(r), divided by the
      same sum for the best possible ranking (the references with the smallest propensities first), as the Extreme
      Classification Repository's tools report it.

    An example without reference labels scores 0 in P@k and nDCG@k (it cannot be ranked right) and adds nothing to
    PSP@k; no metric is ever NaN. Ties are broken by label id. Reference entries of −100 (left out) count as not
    relevant.

    Called as `compute_metrics(prediction, compute_result)` it is the `Trainer`'s metric under
    `batch_eval_metrics=True`: each evaluation batch is ranked and forgotten, so a held-out set of many examples
    and 100k labels never sits in memory as a dense matrix.
    """

    def __init__(self, ks: tuple[int, ...] = (1, 3, 5), propensities: np.ndarray | None = None) -> None:
        self.ks = tuple(ks)
        self.weights = None if propensities is None else 1.0 / np.asarray(propensities, dtype=float)
        self.reset()

    def reset(self) -> None:
        self.examples = 0
        self.sums: dict[str, float] = {}

    def update(self, scores: np.ndarray | torch.Tensor, gold: np.ndarray | torch.Tensor) -> None:
        """Adds a batch: `scores (b, N)` (logits or probabilities) and references `(b, N)` (1 = relevant)."""
        scores, gold = _as_numpy(scores).astype(float), _as_numpy(gold) > 0.5
        if scores.shape != gold.shape or scores.ndim != 2:
            raise ValueError(f"scores {scores.shape} and references {gold.shape} must both be (examples, labels).")
        ks = [k for k in self.ks if k <= scores.shape[1]]
        if not scores.shape[0] or not ks:
            return
        order = np.argsort(-scores, axis=1, kind="stable")[:, : max(ks)]
        ranked = np.take_along_axis(gold, order, axis=1)  # (b, k): y_(r)
        discounts = 1.0 / np.log2(np.arange(2, max(ks) + 2))
        relevant = gold.sum(axis=1)
        for k in ks:
            dcg = (ranked[:, :k] * discounts[:k]).sum(axis=1)
            ideal = np.cumsum(discounts[:k])[np.minimum(relevant, k) - 1] * (relevant > 0)
            found = {
                f"precision_at_{k}": ranked[:, :k].sum() / k,
                f"ndcg_at_{k}": np.divide(dcg, ideal, out=np.zeros_like(dcg), where=ideal > 0).sum(),
            }
            if self.weights is not None:
                found[f"psp_gained_{k}"] = (ranked[:, :k] * self.weights[order[:, :k]]).sum()
                best = np.sort(np.where(gold, self.weights[None, :], 0.0), axis=1)[:, ::-1][:, :k]
                found[f"psp_best_{k}"] = best.sum()
            for name, value in found.items():
                self.sums[name] = self.sums.get(name, 0.0) + float(value)
        self.examples += scores.shape[0]

    def compute(self) -> dict[str, float]:
        """The metrics of everything added (`{}` before any example)."""
        metrics = {}
        for k in self.ks:
            if f"precision_at_{k}" not in self.sums:
                continue
            for name in (f"precision_at_{k}", f"ndcg_at_{k}"):
                metrics[name] = self.sums[name] / self.examples
            if self.weights is not None:
                best = self.sums[f"psp_best_{k}"]
                metrics[f"psp_at_{k}"] = self.sums[f"psp_gained_{k}"] / best if best > 0 else 0.0
        return metrics

    def __call__(self, prediction: EvalPrediction, compute_result: bool = True) -> dict[str, float]:
        logits = prediction.predictions[0] if isinstance(prediction.predictions, tuple) else prediction.predictions
        self.update(logits, prediction.label_ids)
        if not compute_result:
            return {}
        metrics = self.compute()
        self.reset()
        return metrics


def _as_numpy(values: np.ndarray | torch.Tensor) -> np.ndarray:
    return values.detach().float().cpu().numpy() if isinstance(values, torch.Tensor) else np.asarray(values)


def ranking_metrics(
    scores: np.ndarray, gold: np.ndarray, ks: tuple[int, ...] = (1, 3, 5), propensities: np.ndarray | None = None
) -> dict[str, float]:
    """P@k, nDCG@k and (with `propensities`) PSP@k of `scores (n, N)` against multi-hot `gold (n, N)` at once
    (`RankingMetrics` defines them and accumulates them batch by batch)."""
    metrics = RankingMetrics(ks, propensities)
    metrics.update(scores, gold)
    return metrics.compute()


def label_propensities(label_sets: Sequence[Sequence[int]], num_labels: int, a: float = 0.55, b: float = 1.5):
    """`jain_propensities` of `num_labels` labels from the training examples' label id sets."""
    counts = np.zeros(num_labels)
    for labels in label_sets:
        counts[list(set(labels))] += 1
    return jain_propensities(counts, max(len(label_sets), 2), a, b)


def multi_hot_metrics(propensities: np.ndarray | None = None) -> Callable[[EvalPrediction], dict[str, float]]:
    """`compute_metrics` for `Trainer` on a multi-label classifier (one logit per label): the set metrics with a
    label predicted when its sigmoid exceeds 0.5 (logit > 0), and the ranking metrics P@k, nDCG@k (k = 1, 3, 5),
    with PSP@k when the labels' `propensities` are given (`label_propensities` of the training labels)."""

    def compute(prediction: EvalPrediction) -> dict[str, float]:
        logits = prediction.predictions[0] if isinstance(prediction.predictions, tuple) else prediction.predictions
        logits, gold = np.asarray(logits), np.asarray(prediction.label_ids) > 0.5
        return {**multi_label_metrics(logits > 0, gold), **ranking_metrics(logits, gold, propensities=propensities)}

    return compute
