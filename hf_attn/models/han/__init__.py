"""HAN: Hierarchical Attention Networks for Document Classification (Yang et al., NAACL 2016)."""

from .configuration_han import HanConfig
from .modeling_han import HanForDocumentClassification, HanModel, HanPreTrainedModel

__all__ = ["HanConfig", "HanForDocumentClassification", "HanModel", "HanPreTrainedModel"]
