"""Metrics: accuracy, multi-label set metrics, BLEU, and how well attention lands on known evidence."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from transformers import EvalPrediction, PreTrainedConfig, PreTrainedTokenizerBase

from .models.sgm.modeling_sgm import label_ids_of_sequence


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


def multi_hot_metrics(prediction: EvalPrediction) -> dict[str, float]:
    """`compute_metrics` for `Trainer` on a multi-label classifier (one logit per label): a label is predicted when
    its sigmoid exceeds 0.5 (logit > 0)."""
    logits = prediction.predictions[0] if isinstance(prediction.predictions, tuple) else prediction.predictions
    return multi_label_metrics(np.asarray(logits) > 0, np.asarray(prediction.label_ids) > 0.5)
