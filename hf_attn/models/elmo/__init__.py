"""ELMo: Deep contextualized word representations (Peters et al., NAACL 2018)."""

from .configuration_elmo import ElmoConfig
from .modeling_elmo import (
    ElmoForBidirectionalLanguageModeling,
    ElmoForSequenceClassification,
    ElmoForTokenClassification,
    ElmoModel,
    ElmoPreTrainedModel,
    ElmoScalarMix,
    remove_sentence_boundaries,
)

__all__ = [
    "ElmoConfig",
    "ElmoForBidirectionalLanguageModeling",
    "ElmoForSequenceClassification",
    "ElmoForTokenClassification",
    "ElmoModel",
    "ElmoPreTrainedModel",
    "ElmoScalarMix",
    "remove_sentence_boundaries",
]
