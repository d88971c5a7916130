"""Multi-label classification: a text and a set of label names (the `multi_label` shape; AttentionXML's label
tree is a variant of it, in its folder)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from transformers import PreTrainedConfig

from ..data.cache import column_values
from ..data.collators import labels_by_frequency
from ..data.kinds import LABEL_SEQUENCE, MULTI_HOT, Document, Sentence, SourceAndTarget
from ..data.task_data import TASK_LAYOUTS, TaskData
from .base import TaskShape
from .metrics import RANKING_METRICS, jain_propensities, label_propensities, label_sequence_metrics, multi_hot_metrics
from .prediction import model_inputs, top_attended


class MultiLabel(TaskShape):
    """A text and a set of labels. Labels are sorted by training frequency (`id2label`, the order a label-sequence
    head emits them in). Each head learns its label kind's targets (`LabelKind.label_set_targets`): a label sequence
    `[l_1, …, l_k, EOS]`, scored on `generate()`'s label sets (greedy unless `num_beams`), or indicator vectors.
    Both report hamming loss, micro/macro-F1 and subset accuracy."""

    layout = TASK_LAYOUTS["multi_label"]
    label_kinds = (LABEL_SEQUENCE, MULTI_HOT)
    reported_metrics = ("hamming_loss", "micro_f1", "macro_f1", "subset_accuracy", *RANKING_METRICS)
    needs_ahead = "the labels sorted by their frequency"
    input_kinds = (Sentence, Document, SourceAndTarget)  # a label-sequence head reads a text and decodes labels

    def generates(self, head):
        return head.labels is LABEL_SEQUENCE

    def label_names(self, data):
        return labels_by_frequency(column_values(data.train, data.label_column))

    def encoder(self, data, tokenizer, config, head, max_length=None):
        kwargs = {"truncation": max_length is not None, "max_length": max_length}

        def encode(batch: dict[str, list]) -> dict[str, list]:
            encoded = dict(tokenizer(batch[data.text_column], **kwargs))
            # A held-out label training never saw (a synthetic split too small to show every label) is left out,
            # as `prepare_task_data` leaves it out of a file's held-out label sets: no model can predict it.
            known = config.label2id
            indices = [sorted(known[name] for name in names if name in known) for names in batch[data.label_column]]
            encoded["labels"] = head.labels.label_set_targets(indices, config)  # indicators, or a label sequence
            return encoded

        return encode

    def metrics(self, head, config, tokenizer, data=None):
        if head.labels is LABEL_SEQUENCE:
            return label_sequence_metrics(config)
        return multi_hot_metrics(self.propensities(config, data))

    def config_fields(self, tokenizer, labels, data=None):
        fields = super().config_fields(tokenizer, labels, data)
        if data is not None and labels:  # PSP@k's propensities, scored again by `hf-attn evaluate`
            counts = np.zeros(len(labels), dtype=np.int64)
            index = {label: i for i, label in enumerate(labels)}
            for names in column_values(data.train, data.label_column):
                counts[sorted({index[name] for name in names if name in index})] += 1
            fields["label_frequencies"] = {"examples": len(data.train), "counts": counts.tolist()}
        return fields

    @staticmethod
    def propensities(config: PreTrainedConfig, data: TaskData | None) -> Any:
        """Jain et al.'s propensity of each label from its training frequency (for PSP@k): the frequencies the
        config records (`label_frequencies`, written at training), else those of `data`'s training split; `None`
        without either."""
        recorded = getattr(config, "label_frequencies", None)
        if recorded is not None:
            return jain_propensities(np.asarray(recorded["counts"], dtype=float), max(recorded["examples"], 2))
        if data is None or data.label_column is None:
            return None
        label_sets = [
            [config.label2id[name] for name in names if name in config.label2id]
            for names in column_values(data.train, data.label_column)
        ]
        return label_propensities(label_sets, config.num_labels)

    def prepare(self, model, args, eval_split):
        if getattr(args, "predict_with_generate", False):
            args.generation_max_length = model.config.num_labels + 2  # start token, every label once, EOS
            args.generation_num_beams = args.generation_num_beams or 1
            model.generation_config.update(num_beams=args.generation_num_beams, max_length=args.generation_max_length)

    @torch.no_grad()
    def predict(self, model, tokenizer, head, texts, pairs=None, top_k=5):
        inputs = model_inputs(head, tokenizer, texts, None, model.device)
        if head.labels is LABEL_SEQUENCE:
            return [{"labels": labels} for labels in model.predict_label_sets(**inputs)]
        output = model(**inputs, **head.attention_kwargs)
        attended = top_attended(model, head, inputs, output, tokenizer, top_k)
        return [
            {"labels": [model.config.id2label[int(i)] for i in (row > 0).nonzero().flatten()], "attended": attended[n]}
            for n, row in enumerate(output.logits)
        ]

    def headline(self, metrics):
        return f"held-out micro-F1 {metrics['micro_f1']:.4f}, hamming loss {metrics['hamming_loss']:.4f}"
