"""The held-out passes that score a trained model beyond `compute_metrics` (`hf_attn.tasks.metrics`): how much of
its attention lands on the known evidence of a synthetic task, and its accuracy at one position. The task shapes run
them after training."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from transformers import PreTrainedModel

from ..data.collators import PaddingCollator
from .metrics import evidence_attention_scores

if TYPE_CHECKING:  # datasets loads in a second: only its type is named here
    from datasets import Dataset


@torch.no_grad()
def word_attention_on_evidence(
    model: PreTrainedModel,
    episodes: Any,
    evidence: list[list[int]],
    collator: Any,
    field: str = "word_attentions",
    batch_size: int = 16,
) -> dict[str, float]:
    """How much of the queries' word attention lands on the words that carry their class: `hit_rate` (the most
    attended word is one of them), `evidence_mass` (their total weight) and `evidence_mass_uniform` (what a
    uniform attention would give them), over the queries of `episodes`."""
    was_training = model.training
    model.eval()
    hits, masses, uniform = [], [], []
    for start in range(0, len(episodes), batch_size):
        indices = range(start, min(start + batch_size, len(episodes)))
        batch = collator([episodes[i] for i in indices])
        inputs = {name: tensor.to(model.device) for name, tensor in batch.items() if name != "labels"}
        attention = getattr(model(**inputs), field)  # over the queries' tokens, (B, Q, T)
        if attention is None:  # the word attention is switched off
            model.train(was_training)
            return {}
        attention = attention.float().cpu()  # (B, Q, T)
        lengths = batch["attention_mask"].sum(-1)
        for row, index in enumerate(indices):
            _, queries, _ = episodes.sample(index)
            for slot, instance in enumerate(queries):
                positions = [p for p in evidence[instance] if p < int(lengths[row, slot])]
                if not positions:
                    continue
                weights = attention[row, slot]
                hits.append(int(weights.argmax()) in positions)
                masses.append(float(weights[positions].sum()))
                uniform.append(len(positions) / int(lengths[row, slot]))
    model.train(was_training)
    return {
        "hit_rate": float(np.mean(hits)) if hits else float("nan"),
        "evidence_mass": float(np.mean(masses)) if masses else float("nan"),
        "evidence_mass_uniform": float(np.mean(uniform)) if uniform else float("nan"),
    }


def encoded_input_columns(dataset: Dataset) -> list[str]:
    """The columns of an encoded split the model reads (its ids and masks), not its labels or evidence."""
    return [name for name in dataset.column_names if name.endswith(("input_ids", "attention_mask"))]


@torch.no_grad()
def score_evidence_attention(
    model: PreTrainedModel,
    dataset: Dataset,
    evidence_column: str,
    attention_field: str,
    batch_size: int = 64,
    attention_kwargs: dict[str, Any] | None = None,
) -> dict[str, float]:
    """Runs `model` over the encoded `dataset` (with the head's `attention_kwargs`, e.g. `output_attentions=True`)
    and scores `attention_field` (the top layer's, for per-layer maps) against the evidence column; `{}` when the
    model does not return that field."""
    collator = PaddingCollator(model.config.pad_token_id or 0)
    input_names = encoded_input_columns(dataset)
    was_training = model.training
    model.eval()
    attentions, evidence = [], []
    for start in range(0, len(dataset), batch_size):
        rows = dataset.select(range(start, min(start + batch_size, len(dataset))))
        batch = collator([{name: row[name] for name in [*input_names, evidence_column]} for row in rows])
        output = model(**{name: batch[name].to(model.device) for name in input_names}, **(attention_kwargs or {}))
        attention = getattr(output, attention_field)
        if attention is None:  # e.g. a pair model built without the attention this field holds
            model.train(was_training)
            return {}
        if isinstance(attention, tuple):  # one map per layer: the top layer's
            attention = attention[-1]
        attention = attention.float().cpu()  # (B, R, T), or (B, S) over sentences
        if attention.dim() == 2:
            attention = attention[:, None, :]
        attentions.append(attention)
        # Evidence beyond the keys the model was given (a concept set without the deciding concept), or an attention
        # with no key at all, has nothing to be found: not scored.
        absent = (batch[evidence_column] >= attention.size(-1)) | (attention.sum(-1).amax(-1) == 0)
        evidence.append(batch[evidence_column].masked_fill(absent, -1))
    model.train(was_training)
    # Batches pad to different lengths: right-pad every batch's attention to the longest of the dataset.
    longest = max(attention.size(-1) for attention in attentions)
    attentions = [torch.nn.functional.pad(attention, (0, longest - attention.size(-1))) for attention in attentions]
    return evidence_attention_scores(torch.cat(attentions), torch.cat(evidence))


@torch.no_grad()
def token_accuracy_at(model: PreTrainedModel, dataset: Dataset, position_column: str, offset: int = 0) -> float:
    """Token-classification accuracy at one position per example (`position_column` + `offset`)."""
    was_training = model.training
    model.eval()
    collator = PaddingCollator(0)
    correct = []
    for start in range(0, len(dataset), 64):
        rows = dataset.select(range(start, min(start + 64, len(dataset))))
        batch = collator([{"input_ids": r["input_ids"], "attention_mask": r["attention_mask"]} for r in rows])
        logits = model(**{name: tensor.to(model.device) for name, tensor in batch.items()}).logits
        positions = torch.tensor(rows[position_column], device=logits.device) + offset
        predicted = logits[torch.arange(len(rows), device=logits.device), positions].argmax(dim=-1)
        labels = torch.tensor([r["labels"][p] for r, p in zip(rows, positions.tolist(), strict=True)])
        correct.append(predicted.cpu() == labels)
    model.train(was_training)
    return torch.cat(correct).float().mean().item()
