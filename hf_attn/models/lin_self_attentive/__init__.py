from .configuration_lin_self_attentive import LinSelfAttentiveConfig
from .modeling_lin_self_attentive import (
    LinSelfAttentiveForPairClassification,
    LinSelfAttentiveForSequenceClassification,
    LinSelfAttentiveModel,
    LinSelfAttentivePreTrainedModel,
)

__all__ = [
    "LinSelfAttentiveConfig",
    "LinSelfAttentiveForPairClassification",
    "LinSelfAttentiveForSequenceClassification",
    "LinSelfAttentiveModel",
    "LinSelfAttentivePreTrainedModel",
]
