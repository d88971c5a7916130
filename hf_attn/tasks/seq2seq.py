"""Sequence to sequence: a source text and its target text (the `seq2seq` shape)."""

from __future__ import annotations

import torch

from ..data.kinds import TOKEN_VOCAB, SourceAndTarget
from ..data.task_data import TASK_LAYOUTS
from .base import TaskShape
from .metrics import translation_metrics
from .prediction import model_inputs


class SequenceToSequence(TaskShape):
    """A source text and a target text (one shared vocabulary): `Seq2SeqTrainer` with beam search (4, α = 0.6, the
    Transformer paper's §6.1), BLEU and exact match."""

    layout = TASK_LAYOUTS["seq2seq"]
    label_kinds = (TOKEN_VOCAB,)
    reported_metrics = ("bleu", "exact_match")
    needs_ahead = "the longest held-out target, for the generation length"
    input_kinds = (SourceAndTarget,)

    def generates(self, head):
        return True

    def config_fields(self, tokenizer, labels, data=None):
        return {
            **super().config_fields(tokenizer, None),
            "bos_token_id": tokenizer.bos_token_id,
            "eos_token_id": tokenizer.eos_token_id,
            "decoder_start_token_id": tokenizer.bos_token_id,
        }

    def encoder(self, data, tokenizer, config, head, max_length=None):
        kwargs = {"truncation": max_length is not None, "max_length": max_length}

        def encode(batch: dict[str, list]) -> dict[str, list]:
            encoded = dict(tokenizer(batch[data.text_column], **kwargs))
            encoded["labels"] = tokenizer(batch[data.pair_column], **kwargs)["input_ids"]
            return encoded

        return encode

    def metrics(self, head, config, tokenizer, data=None):
        return translation_metrics(tokenizer)

    def prepare(self, model, args, eval_split):
        num_beams = args.generation_num_beams or 4
        longest = max((len(labels) for labels in eval_split["labels"]), default=0)
        args.generation_max_length = longest + 10
        args.generation_num_beams = num_beams
        model.generation_config.update(num_beams=num_beams, max_length=args.generation_max_length)
        if num_beams > 1:  # the paper's α = 0.6; transformers refuses to save a length penalty for greedy search
            model.generation_config.length_penalty = 0.6

    @torch.no_grad()
    def predict(self, model, tokenizer, head, texts, pairs=None, top_k=5):
        inputs = model_inputs(head, tokenizer, texts, None, model.device)
        generated = model.generate(**inputs)
        return [{"translation": text} for text in tokenizer.batch_decode(generated, skip_special_tokens=True)]

    def headline(self, metrics):
        return f"held-out exact match {metrics['exact_match']:.4f}, BLEU {metrics['bleu']:.2f}"
