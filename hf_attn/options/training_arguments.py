"""transformers' training arguments with hf_attn's defaults: `HfAttnTrainingArguments`, the second dataclass of
`hf-attn train` (`hf_attn.options.reading` reads both). Its fields of hf_attn's own come first
(`hf_attn.options.arguments`)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers import Seq2SeqTrainingArguments

from .arguments import HfAttnTrainingDefaults

__all__ = ["HfAttnTrainingArguments"]


@dataclass
class HfAttnTrainingArguments(HfAttnTrainingDefaults, Seq2SeqTrainingArguments):
    """transformers' `Seq2SeqTrainingArguments` (every `TrainingArguments` flag) with hf_attn's defaults
    (`HfAttnTrainingDefaults`, first in the bases so that its fields win), `data_seed` = `seed` (a resumed run sees
    the same data order) and, without an accelerator, `use_cpu`, which is what makes a multi-process launch on CPUs
    join one gloo group. `--push_to_hub` uploads the finished folder once (weights, tokenizer, card; never a
    pickle), not every checkpoint."""

    def __post_init__(self) -> None:
        if self.use_cpu is None:
            self.use_cpu = not torch.accelerator.is_available()
        if self.data_seed is None:
            self.data_seed = self.seed
        if isinstance(self.resume_from_checkpoint, str) and self.resume_from_checkpoint.lower() in ("true", "last"):
            self.resume_from_checkpoint = True  # the last checkpoint of output_dir
        super().__post_init__()
