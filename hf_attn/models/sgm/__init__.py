"""SGM: Sequence Generation Model for Multi-Label Classification (Yang et al., COLING 2018)."""

from .configuration_sgm import SgmConfig
from .modeling_sgm import (
    RepeatedLabelLogitsProcessor,
    SgmCache,
    SgmForMultiLabelClassification,
    SgmForMultiLabelGeneration,
    SgmModel,
    SgmPreTrainedModel,
    label_ids_of_sequence,
    sgm_original_beam_search,
)

__all__ = [
    "RepeatedLabelLogitsProcessor",
    "SgmCache",
    "SgmConfig",
    "SgmForMultiLabelClassification",
    "SgmForMultiLabelGeneration",
    "SgmModel",
    "SgmPreTrainedModel",
    "label_ids_of_sequence",
    "sgm_original_beam_search",
]
