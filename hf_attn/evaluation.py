"""Metrics: accuracy, and how well attention lands on known evidence."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from transformers import EvalPrediction, PreTrainedTokenizerBase


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
