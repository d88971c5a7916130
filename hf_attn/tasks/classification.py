"""Classification of a text, or of a pair of texts, into one class (the `classification` and
`pair_classification` shapes)."""

from __future__ import annotations

import torch

from ..data.kinds import CLASS
from ..data.task_data import TASK_LAYOUTS
from .base import TaskShape
from .prediction import model_inputs, top_attended
from .scoring import score_evidence_attention


class Classification(TaskShape):
    """A text (sentence or document) and one class: accuracy, and attention on the evidence where it is known."""

    layout = TASK_LAYOUTS["classification"]
    label_kinds = (CLASS,)
    streams = True

    @torch.no_grad()
    def predict(self, model, tokenizer, head, texts, pairs=None, top_k=5):
        inputs = model_inputs(head, tokenizer, texts, pairs, model.device)
        output = model(**inputs, **head.attention_kwargs)  # the maps `top_attended` reads
        probabilities = output.logits.float().softmax(dim=-1)
        attended = top_attended(model, head, inputs, output, tokenizer, top_k)
        results = []
        for row, scores in enumerate(probabilities):
            best = int(scores.argmax())
            label = model.config.id2label.get(best, str(best))
            results.append({"label": label, "score": float(scores[best]), "attended": attended[row]})
        return results

    def extra_metrics(self, model, head, encoded_eval, data):
        if head.evidence_field is None or data.evidence_column is None:
            return {}
        return score_evidence_attention(
            model, encoded_eval, data.evidence_column, head.evidence_field, attention_kwargs=head.attention_kwargs
        )


class PairClassification(Classification):
    """Two texts (premise and hypothesis; a document and its translation) and one class."""

    layout = TASK_LAYOUTS["pair_classification"]
    pairs = True
