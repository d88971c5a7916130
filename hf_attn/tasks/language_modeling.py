"""Language modelling: the words of a text predicted from their context (the `language_modeling` shape)."""

from __future__ import annotations

import math

import torch

from ..data.kinds import TOKEN_VOCAB, Sentence
from ..data.task_data import TASK_LAYOUTS
from ..tokenization.base import task_tokenizer
from .base import TaskShape
from .prediction import model_inputs


class LanguageModeling(TaskShape):
    """Plain text: the model predicts the text's own words (a causal LM shifts them; ELMo's biLM predicts the next
    word forwards and the previous one backwards). Reports held-out perplexity, exp(mean token cross-entropy)."""

    layout = TASK_LAYOUTS["language_modeling"]
    label_kinds = (TOKEN_VOCAB,)
    reported_metrics = ("perplexity",)
    streams = True
    input_kinds = (Sentence,)  # one position per word (ELMo's characters too): a document is no language

    def encoder(self, data, tokenizer, config, head, max_length=None):
        kwargs = {"truncation": max_length is not None, "max_length": max_length}
        contract = task_tokenizer(tokenizer)

        def encode(batch: dict[str, list]) -> dict[str, list]:
            # The targets: the text's own ids, or what its tokenizer says a language model predicts (word ids, when
            # the inputs are characters).
            return contract.language_model_encoding(batch[data.text_column], **kwargs)

        return encode

    def metrics(self, head, config, tokenizer, data=None):
        return None  # the loss is the metric

    def finish_metrics(self, metrics):
        return {**metrics, "perplexity": math.exp(min(metrics["loss"], 700.0))}

    def headline(self, metrics):
        return f"held-out perplexity {metrics['perplexity']:.2f}"

    @torch.no_grad()
    def predict(self, model, tokenizer, head, texts, pairs=None, top_k=5):
        if not model.can_generate():
            return super().predict(model, tokenizer, head, texts, pairs, top_k)
        results = []
        for text in texts:  # one at a time: generation continues each text from its own last token
            inputs = model_inputs(head, tokenizer, [text], None, model.device)
            generated = model.generate(**inputs, max_new_tokens=20, do_sample=False)
            continuation = generated[0, inputs["input_ids"].shape[1] :]
            results.append({"continuation": tokenizer.decode(continuation, skip_special_tokens=True)})
        return results
