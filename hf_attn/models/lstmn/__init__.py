"""LSTMN: Long Short-Term Memory-Networks for Machine Reading (Cheng, Dong & Lapata, EMNLP 2016)."""

from .configuration_lstmn import LstmnConfig
from .modeling_lstmn import (
    LstmnCache,
    LstmnForCausalLM,
    LstmnForPairClassification,
    LstmnForSequenceClassification,
    LstmnLayer,
    LstmnModel,
    LstmnPreTrainedModel,
)

__all__ = [
    "LstmnCache",
    "LstmnConfig",
    "LstmnForCausalLM",
    "LstmnForPairClassification",
    "LstmnForSequenceClassification",
    "LstmnLayer",
    "LstmnModel",
    "LstmnPreTrainedModel",
]
