"""BI-Attention: Attention-based LSTM Network for Cross-Lingual Sentiment Classification (Zhou et al., EMNLP 2016)."""

from .configuration_bi_attention import BiAttentionConfig
from .modeling_bi_attention import BiAttentionForDocumentClassification, BiAttentionModel, BiAttentionPreTrainedModel

__all__ = [
    "BiAttentionConfig",
    "BiAttentionForDocumentClassification",
    "BiAttentionModel",
    "BiAttentionPreTrainedModel",
]
