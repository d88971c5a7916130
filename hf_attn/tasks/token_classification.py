"""Token classification: a tag for each word of a text (the `token_classification` shape)."""

from __future__ import annotations

import torch

from ..data.kinds import TOKEN_CLASS
from ..data.task_data import TASK_LAYOUTS
from ..tokenization.base import task_tokenizer
from .base import TaskShape
from .prediction import model_inputs
from .scoring import token_accuracy_at


class TokenClassification(TaskShape):
    """Words (whitespace-separated) with one tag each: token accuracy, and the accuracy at the evidence position
    where it is known (the ambiguous word of the synthetic tagging task). A tokenizer that adds sentence markers
    (ELMo's `<S>`, `</S>`) gets no tag there (-100)."""

    layout = TASK_LAYOUTS["token_classification"]
    label_kinds = (TOKEN_CLASS,)
    reported_metrics = ("accuracy", "ambiguous_accuracy")
    streams = True

    def encoder(self, data, tokenizer, config, head, max_length=None):
        kwargs = {"truncation": max_length is not None, "max_length": max_length}
        markers = task_tokenizer(tokenizer).sentence_markers

        def encode(batch: dict[str, list]) -> dict[str, list]:
            encoded = dict(tokenizer(batch[data.text_column], **kwargs))
            tags = batch[data.label_column]
            encoded["labels"] = [[-100, *row, -100] for row in tags] if markers else [list(row) for row in tags]
            return encoded

        return encode

    @torch.no_grad()
    def predict(self, model, tokenizer, head, texts, pairs=None, top_k=5):
        inputs = model_inputs(head, tokenizer, texts, None, model.device)
        predicted = model(**inputs).logits.argmax(dim=-1)
        offset = 1 if task_tokenizer(tokenizer).sentence_markers else 0  # after the start marker
        results = []
        for row, text in enumerate(texts):
            words = text.split()
            tags = [model.config.id2label[int(i)] for i in predicted[row, offset : offset + len(words)]]
            results.append({"tags": list(zip(words, tags, strict=False))})
        return results

    def extra_metrics(self, model, head, encoded_eval, data):
        if data.evidence_column is None or data.evidence_column not in encoded_eval.column_names:
            return {}
        offset = 1 if encoded_eval[0]["labels"][0] == -100 else 0
        return {"ambiguous_accuracy": token_accuracy_at(model, encoded_eval, data.evidence_column, offset=offset)}
