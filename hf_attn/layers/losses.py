"""Task losses shared by the classification heads."""

from __future__ import annotations

import torch
from torch import nn
from transformers import PreTrainedConfig


def classification_loss(config: PreTrainedConfig, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The task loss by `config.problem_type` (inferred from `num_labels` and the labels' dtype, as transformers)."""
    if config.problem_type is None:
        if config.num_labels == 1:
            config.problem_type = "regression"
        elif labels.dtype in (torch.long, torch.int):
            config.problem_type = "single_label_classification"
        else:
            config.problem_type = "multi_label_classification"
    if config.problem_type == "regression":
        return nn.functional.mse_loss(logits.squeeze(-1), labels.to(logits.dtype).view(-1))
    if config.problem_type == "single_label_classification":
        return nn.functional.cross_entropy(logits.view(-1, config.num_labels), labels.view(-1))
    return nn.functional.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype))
