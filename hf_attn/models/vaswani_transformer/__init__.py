from .configuration_vaswani_transformer import VaswaniTransformerConfig
from .modeling_vaswani_transformer import (
    VaswaniTransformerForConditionalGeneration,
    VaswaniTransformerModel,
    VaswaniTransformerPreTrainedModel,
)

__all__ = [
    "VaswaniTransformerConfig",
    "VaswaniTransformerForConditionalGeneration",
    "VaswaniTransformerModel",
    "VaswaniTransformerPreTrainedModel",
]
