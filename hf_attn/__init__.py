"""hf_attn: the classic attention architectures of NLP as native Hugging Face models.

`import hf_attn` registers every architecture with the transformers Auto classes (see `hf_attn.registry`).
"""

from .models.bi_attention import BiAttentionConfig, BiAttentionForDocumentClassification, BiAttentionModel
from .models.elmo import (
    ElmoConfig,
    ElmoForBidirectionalLanguageModeling,
    ElmoForSequenceClassification,
    ElmoForTokenClassification,
    ElmoModel,
)
from .models.han import HanConfig, HanForDocumentClassification, HanModel
from .models.lin_self_attentive import (
    LinSelfAttentiveConfig,
    LinSelfAttentiveForPairClassification,
    LinSelfAttentiveForSequenceClassification,
    LinSelfAttentiveModel,
)
from .models.lstmn import (
    LstmnConfig,
    LstmnForCausalLM,
    LstmnForPairClassification,
    LstmnForSequenceClassification,
    LstmnModel,
)
from .models.sgm import (
    SgmConfig,
    SgmForMultiLabelClassification,
    SgmForMultiLabelGeneration,
    SgmModel,
    sgm_original_beam_search,
)
from .models.vaswani_transformer import (
    VaswaniTransformerConfig,
    VaswaniTransformerForConditionalGeneration,
    VaswaniTransformerModel,
)
from .registry import ARCHITECTURES, get_architecture, list_models, register_all

__version__ = "0.1.0"

register_all()

__all__ = [
    "ARCHITECTURES",
    "BiAttentionConfig",
    "BiAttentionForDocumentClassification",
    "BiAttentionModel",
    "ElmoConfig",
    "ElmoForBidirectionalLanguageModeling",
    "ElmoForSequenceClassification",
    "ElmoForTokenClassification",
    "ElmoModel",
    "HanConfig",
    "HanForDocumentClassification",
    "HanModel",
    "LinSelfAttentiveConfig",
    "LinSelfAttentiveForPairClassification",
    "LinSelfAttentiveForSequenceClassification",
    "LinSelfAttentiveModel",
    "LstmnConfig",
    "LstmnForCausalLM",
    "LstmnForPairClassification",
    "LstmnForSequenceClassification",
    "LstmnModel",
    "SgmConfig",
    "SgmForMultiLabelClassification",
    "SgmForMultiLabelGeneration",
    "SgmModel",
    "VaswaniTransformerConfig",
    "VaswaniTransformerForConditionalGeneration",
    "VaswaniTransformerModel",
    "get_architecture",
    "list_models",
    "sgm_original_beam_search",
]
