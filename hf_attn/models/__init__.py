"""One folder per architecture: its config and model (which import only torch, transformers, their own folder's
files and hf_attn's primitives, and travel as the saved folder's code), its registry row (`architecture.py`) and,
where it has them, its views, kinds and converter."""

from typing import TYPE_CHECKING

# What an IDE or a type checker follows of the architectures' public names (`import hf_attn` reads them from each
# folder's `__all__`), generated: `python -m hf_attn.registry.index` rewrites it when a folder lands.
if TYPE_CHECKING:
    # <generated: the public names>
    from .attention_xml.configuration_attention_xml import AttentionXmlConfig
    from .attention_xml.modeling_attention_xml import (
        AttentionXmlForLabelTree,
        AttentionXmlForSequenceClassification,
        AttentionXmlModel,
    )
    from .bi_attention.configuration_bi_attention import BiAttentionConfig
    from .bi_attention.modeling_bi_attention import BiAttentionForDocumentClassification, BiAttentionModel
    from .biblosa.configuration_biblosa import BiBlosaConfig
    from .biblosa.modeling_biblosa import (
        BiBlosaForPairClassification,
        BiBlosaForSequenceClassification,
        BiBlosaModel,
        block_length_for_lengths,
        original_block_length,
    )
    from .elmo.configuration_elmo import ElmoConfig
    from .elmo.modeling_elmo import (
        ElmoForBidirectionalLanguageModeling,
        ElmoForSequenceClassification,
        ElmoForTokenClassification,
        ElmoModel,
    )
    from .han.configuration_han import HanConfig
    from .han.modeling_han import HanForDocumentClassification, HanModel
    from .hapn.configuration_hapn import HapnConfig
    from .hapn.modeling_hapn import HapnForFewShotClassification, HapnModel
    from .lin_self_attentive.configuration_lin_self_attentive import LinSelfAttentiveConfig
    from .lin_self_attentive.modeling_lin_self_attentive import (
        LinSelfAttentiveForPairClassification,
        LinSelfAttentiveForSequenceClassification,
        LinSelfAttentiveModel,
    )
    from .lstmn.configuration_lstmn import LstmnConfig
    from .lstmn.modeling_lstmn import (
        LstmnForCausalLM,
        LstmnForPairClassification,
        LstmnForSequenceClassification,
        LstmnModel,
    )
    from .proto_hatt.configuration_proto_hatt import ProtoHattConfig
    from .proto_hatt.modeling_proto_hatt import (
        ProtoHattForFewShotClassification,
        ProtoHattModel,
        ProtoHattProtoNetForFewShotClassification,
    )
    from .sgm.configuration_sgm import SgmConfig
    from .sgm.generation_sgm import sgm_original_beam_search
    from .sgm.modeling_sgm import SgmForMultiLabelClassification, SgmForMultiLabelGeneration, SgmModel
    from .stcka.configuration_stcka import StckaConfig
    from .stcka.modeling_stcka import StckaForSequenceClassification, StckaModel
    from .vaswani_transformer.configuration_vaswani_transformer import VaswaniTransformerConfig
    from .vaswani_transformer.modeling_vaswani_transformer import (
        VaswaniTransformerForConditionalGeneration,
        VaswaniTransformerModel,
    )
    from .vaswani_transformer.visualization_vaswani_transformer import bertviz_view

    __all__ = [
        "AttentionXmlConfig",
        "AttentionXmlForLabelTree",
        "AttentionXmlForSequenceClassification",
        "AttentionXmlModel",
        "BiAttentionConfig",
        "BiAttentionForDocumentClassification",
        "BiAttentionModel",
        "BiBlosaConfig",
        "BiBlosaForPairClassification",
        "BiBlosaForSequenceClassification",
        "BiBlosaModel",
        "ElmoConfig",
        "ElmoForBidirectionalLanguageModeling",
        "ElmoForSequenceClassification",
        "ElmoForTokenClassification",
        "ElmoModel",
        "HanConfig",
        "HanForDocumentClassification",
        "HanModel",
        "HapnConfig",
        "HapnForFewShotClassification",
        "HapnModel",
        "LinSelfAttentiveConfig",
        "LinSelfAttentiveForPairClassification",
        "LinSelfAttentiveForSequenceClassification",
        "LinSelfAttentiveModel",
        "LstmnConfig",
        "LstmnForCausalLM",
        "LstmnForPairClassification",
        "LstmnForSequenceClassification",
        "LstmnModel",
        "ProtoHattConfig",
        "ProtoHattForFewShotClassification",
        "ProtoHattModel",
        "ProtoHattProtoNetForFewShotClassification",
        "SgmConfig",
        "SgmForMultiLabelClassification",
        "SgmForMultiLabelGeneration",
        "SgmModel",
        "StckaConfig",
        "StckaForSequenceClassification",
        "StckaModel",
        "VaswaniTransformerConfig",
        "VaswaniTransformerForConditionalGeneration",
        "VaswaniTransformerModel",
        "bertviz_view",
        "block_length_for_lengths",
        "original_block_length",
        "sgm_original_beam_search",
    ]

    # </generated>
