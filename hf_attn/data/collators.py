"""Tokenisation of the synthetic datasets and a padding collator for sentences and sentence pairs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:  # datasets loads in a second: imported where rows become a Dataset, not at `import hf_attn`
    from datasets import Dataset
from transformers import PreTrainedTokenizerBase

from ..layers.sequences import shift_tokens_right
from ..tokenization.document import pad_nested


def tokenize_dataset(
    dataset: Dataset,
    tokenizer: PreTrainedTokenizerBase,
    text_column: str = "text",
    pair_column: str | None = None,
    max_length: int | None = None,
) -> Dataset:
    """Adds `input_ids`/`attention_mask` (and `pair_input_ids`/`pair_attention_mask` for a pair column), unpadded;
    the collator pads per batch."""

    def encode(batch: dict[str, list]) -> dict[str, list]:
        kwargs = {"truncation": max_length is not None, "max_length": max_length}
        encoded = dict(tokenizer(batch[text_column], **kwargs))
        if pair_column is not None:
            pair = tokenizer(batch[pair_column], **kwargs)
            encoded["pair_input_ids"] = pair["input_ids"]
            encoded["pair_attention_mask"] = pair["attention_mask"]
        return encoded

    return dataset.map(encode, batched=True)


def labels_by_frequency(label_sets: Sequence[Sequence[str]]) -> list[str]:
    """Every label of `label_sets`, most frequent first (ties by name): the order in which SGM emits labels and the
    order of its `id2label` (§2.1 of the paper: labels sorted by their frequency in the training set)."""
    counts: dict[str, int] = {}
    for labels in label_sets:
        for label in set(labels):
            counts[label] = counts.get(label, 0) + 1
    return sorted(counts, key=lambda label: (-counts[label], label))


class PaddingCollator:
    """Right-pads every `*input_ids` field with `pad_token_id`, every `*attention_mask` field with 0 and token
    `labels` with -100 (ignored by the loss) to the longest in the batch; numeric fields become tensors, strings
    are dropped. A `label` field becomes `labels`, as in transformers' own collators.

    Works for sentences (`input_ids`), pairs (`input_ids` + `pair_input_ids`, padded independently),
    sequence-to-sequence examples (`input_ids`, `decoder_input_ids`, token `labels`), documents (nested lists
    sentences -> words, padded at both levels to `(B, S, T)`) and few-shot episodes (support `(B, N, K, T)`,
    queries `(B, Q, T)`, their `*entity_positions`, and one label per query, padded queries getting -100). `width`
    pads the token axis to at least that many positions (a model whose outputs depend on it, e.g. a converted
    Proto-HATT without padding masks).
    """

    def __init__(self, pad_token_id: int = 0, width: int | None = None) -> None:
        self.pad_token_id = pad_token_id
        self.width = width  # pad the token axis to this width at least (models without padding masks)

    def __call__(self, features: Sequence[dict[str, Any]]) -> dict[str, torch.Tensor]:
        batch: dict[str, torch.Tensor] = {}
        for key in features[0]:
            values = [feature[key] for feature in features]
            if (
                key.endswith("input_ids")
                or key.endswith("attention_mask")
                or key.endswith("entity_positions")
                or (key in ("labels", "label") and isinstance(values[0], list | tuple))
            ):
                pad = self.pad_token_id if key.endswith("input_ids") else -100 if key.startswith("label") else 0
                padded = pad_nested(values, pad)
                if self.width is not None and key.endswith(("input_ids", "attention_mask")):
                    padded = torch.nn.functional.pad(padded, (0, max(self.width - padded.size(-1), 0)), value=pad)
                batch["labels" if key == "label" else key] = padded
            elif isinstance(values[0], bool | int | float) or torch.is_tensor(values[0]):
                batch["labels" if key == "label" else key] = torch.tensor(values)
            elif isinstance(values[0], list | tuple) and values[0] and isinstance(values[0][0], int | float):
                batch[key] = torch.tensor(values)  # fixed-width numbers, e.g. a label tree level's `candidates`
        return batch


class Seq2SeqCollator(PaddingCollator):
    """`PaddingCollator` for sequence-to-sequence rows: a batch with `labels` and no `decoder_input_ids` gets them
    from the labels shifted right (`decoder_start_token_id` first), as transformers' `DataCollatorForSeq2Seq` does,
    so the model runs when `Trainer` takes the labels out of the batch (its label smoother,
    `TrainingArguments(label_smoothing_factor=...)`)."""

    def __init__(self, pad_token_id: int, decoder_start_token_id: int) -> None:
        super().__init__(pad_token_id)
        self.decoder_start_token_id = decoder_start_token_id

    def __call__(self, features: Sequence[dict[str, Any]]) -> dict[str, torch.Tensor]:
        batch = super().__call__(features)
        if "labels" in batch and "decoder_input_ids" not in batch:
            batch["decoder_input_ids"] = shift_tokens_right(
                batch["labels"], self.pad_token_id, self.decoder_start_token_id
            )
        return batch


class LabelSetCollator(PaddingCollator):
    """`PaddingCollator` for rows whose `labels` are label id sets (lists of any length): they become multi-hot
    `(B, num_labels)` float indicators. Rows keep only the ids (a few per text), so a dataset of 100k labels is
    never stored densely; the dense rows exist one batch at a time."""

    def __init__(self, pad_token_id: int, num_labels: int) -> None:
        super().__init__(pad_token_id)
        self.num_labels = num_labels

    def __call__(self, features: Sequence[dict[str, Any]]) -> dict[str, torch.Tensor]:
        batch = super().__call__([{k: v for k, v in row.items() if k != "labels"} for row in features])
        if features and "labels" in features[0]:
            labels = torch.zeros(len(features), self.num_labels)
            for row, ids in enumerate(feature["labels"] for feature in features):
                labels[row, list(ids)] = 1.0
            batch["labels"] = labels
        return batch
