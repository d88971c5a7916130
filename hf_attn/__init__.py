"""hf_attn: the classic attention architectures of NLP as native Hugging Face models.

`import hf_attn` registers every architecture with transformers' Auto classes and pipelines, and exposes each one's
config, models and extra public objects (`PUBLIC`, below). It imports neither torch nor transformers: registration
happens as transformers loads its Auto classes (`hf_attn.auto_registration`), and each name below is imported from
its module when first asked for, so that `hf-attn --help` and `hf-attn list` answer at once.
"""

from __future__ import annotations

import functools
import importlib
from typing import TYPE_CHECKING, Any

from .auto_registration import install as _install_auto_registration

__version__ = "0.1.0"

# Every public name -> the module that defines it. `tests/test_registry.py` checks it against the registry rows
# (each row's config, models and exports); the classes of a folder added later are found through its row too.
PUBLIC: dict[str, str] = {
    "ARCHITECTURES": "hf_attn.registry",
    "get_architecture": "hf_attn.registry",
    "list_models": "hf_attn.registry",
    "register_all": "hf_attn.auto_registration",
    "visualize": "hf_attn.pictures",
    # AttentionXML
    "AttentionXmlConfig": "hf_attn.models.attention_xml.configuration_attention_xml",
    "AttentionXmlModel": "hf_attn.models.attention_xml.modeling_attention_xml",
    "AttentionXmlForSequenceClassification": "hf_attn.models.attention_xml.modeling_attention_xml",
    "AttentionXmlForLabelTree": "hf_attn.models.attention_xml.modeling_attention_xml",
    # BI-Attention (attention-based bilingual LSTM)
    "BiAttentionConfig": "hf_attn.models.bi_attention.configuration_bi_attention",
    "BiAttentionModel": "hf_attn.models.bi_attention.modeling_bi_attention",
    "BiAttentionForDocumentClassification": "hf_attn.models.bi_attention.modeling_bi_attention",
    # Bi-BloSAN (Bi-Directional Block Self-Attention)
    "BiBlosaConfig": "hf_attn.models.biblosa.configuration_biblosa",
    "BiBlosaModel": "hf_attn.models.biblosa.modeling_biblosa",
    "BiBlosaForSequenceClassification": "hf_attn.models.biblosa.modeling_biblosa",
    "BiBlosaForPairClassification": "hf_attn.models.biblosa.modeling_biblosa",
    "block_length_for_lengths": "hf_attn.models.biblosa.modeling_biblosa",
    "original_block_length": "hf_attn.models.biblosa.modeling_biblosa",
    # ELMo (deep contextualized word representations)
    "ElmoConfig": "hf_attn.models.elmo.configuration_elmo",
    "ElmoModel": "hf_attn.models.elmo.modeling_elmo",
    "ElmoForTokenClassification": "hf_attn.models.elmo.modeling_elmo",
    "ElmoForSequenceClassification": "hf_attn.models.elmo.modeling_elmo",
    "ElmoForBidirectionalLanguageModeling": "hf_attn.models.elmo.modeling_elmo",
    # Hierarchical Attention Network (HAN)
    "HanConfig": "hf_attn.models.han.configuration_han",
    "HanModel": "hf_attn.models.han.modeling_han",
    "HanForDocumentClassification": "hf_attn.models.han.modeling_han",
    # HAPN
    "HapnConfig": "hf_attn.models.hapn.configuration_hapn",
    "HapnModel": "hf_attn.models.hapn.modeling_hapn",
    "HapnForFewShotClassification": "hf_attn.models.hapn.modeling_hapn",
    # Structured Self-Attentive Sentence Embedding
    "LinSelfAttentiveConfig": "hf_attn.models.lin_self_attentive.configuration_lin_self_attentive",
    "LinSelfAttentiveModel": "hf_attn.models.lin_self_attentive.modeling_lin_self_attentive",
    "LinSelfAttentiveForSequenceClassification": "hf_attn.models.lin_self_attentive.modeling_lin_self_attentive",
    "LinSelfAttentiveForPairClassification": "hf_attn.models.lin_self_attentive.modeling_lin_self_attentive",
    # LSTMN (Long Short-Term Memory-Network)
    "LstmnConfig": "hf_attn.models.lstmn.configuration_lstmn",
    "LstmnModel": "hf_attn.models.lstmn.modeling_lstmn",
    "LstmnForSequenceClassification": "hf_attn.models.lstmn.modeling_lstmn",
    "LstmnForPairClassification": "hf_attn.models.lstmn.modeling_lstmn",
    "LstmnForCausalLM": "hf_attn.models.lstmn.modeling_lstmn",
    # Proto-HATT
    "ProtoHattConfig": "hf_attn.models.proto_hatt.configuration_proto_hatt",
    "ProtoHattModel": "hf_attn.models.proto_hatt.modeling_proto_hatt",
    "ProtoHattForFewShotClassification": "hf_attn.models.proto_hatt.modeling_proto_hatt",
    "ProtoHattProtoNetForFewShotClassification": "hf_attn.models.proto_hatt.modeling_proto_hatt",
    # SGM (Sequence Generation Model for multi-label classification)
    "SgmConfig": "hf_attn.models.sgm.configuration_sgm",
    "SgmModel": "hf_attn.models.sgm.modeling_sgm",
    "SgmForMultiLabelGeneration": "hf_attn.models.sgm.modeling_sgm",
    "SgmForMultiLabelClassification": "hf_attn.models.sgm.modeling_sgm",
    "sgm_original_beam_search": "hf_attn.models.sgm.generation_sgm",
    # STCKA (Short-Text Classification with Knowledge-Powered Attention)
    "StckaConfig": "hf_attn.models.stcka.configuration_stcka",
    "StckaModel": "hf_attn.models.stcka.modeling_stcka",
    "StckaForSequenceClassification": "hf_attn.models.stcka.modeling_stcka",
    # Transformer (Attention Is All You Need)
    "VaswaniTransformerConfig": "hf_attn.models.vaswani_transformer.configuration_vaswani_transformer",
    "VaswaniTransformerModel": "hf_attn.models.vaswani_transformer.modeling_vaswani_transformer",
    "VaswaniTransformerForConditionalGeneration": "hf_attn.models.vaswani_transformer.modeling_vaswani_transformer",
    "bertviz_view": "hf_attn.models.vaswani_transformer.visualization_vaswani_transformer",
}

__all__ = sorted(PUBLIC)

_install_auto_registration()


def __getattr__(name: str) -> Any:
    module = PUBLIC.get(name) or _row_classes().get(name)
    if module is None:
        raise AttributeError(f"module 'hf_attn' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # looked up once
    return value


@functools.cache
def _row_classes() -> dict[str, str]:
    """The classes every registry row names (config, base model, heads) -> their modules, read from the rows'
    source: an architecture whose folder was added after `PUBLIC` was written is reachable too."""
    from .registry_index import read_index

    classes = {}
    for row in read_index():
        for ref in (row.config_class, row.base_model_class, *(head.model_class for head in row.heads)):
            classes[ref.name] = ref.module
    return classes


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(PUBLIC))


if TYPE_CHECKING:  # what an IDE or a type checker follows
    from .auto_registration import register_all
    from .models.attention_xml.configuration_attention_xml import AttentionXmlConfig
    from .models.attention_xml.modeling_attention_xml import (
        AttentionXmlForLabelTree,
        AttentionXmlForSequenceClassification,
        AttentionXmlModel,
    )
    from .models.bi_attention.configuration_bi_attention import BiAttentionConfig
    from .models.bi_attention.modeling_bi_attention import BiAttentionForDocumentClassification, BiAttentionModel
    from .models.biblosa.configuration_biblosa import BiBlosaConfig
    from .models.biblosa.modeling_biblosa import (
        BiBlosaForPairClassification,
        BiBlosaForSequenceClassification,
        BiBlosaModel,
        block_length_for_lengths,
        original_block_length,
    )
    from .models.elmo.configuration_elmo import ElmoConfig
    from .models.elmo.modeling_elmo import (
        ElmoForBidirectionalLanguageModeling,
        ElmoForSequenceClassification,
        ElmoForTokenClassification,
        ElmoModel,
    )
    from .models.han.configuration_han import HanConfig
    from .models.han.modeling_han import HanForDocumentClassification, HanModel
    from .models.hapn.configuration_hapn import HapnConfig
    from .models.hapn.modeling_hapn import HapnForFewShotClassification, HapnModel
    from .models.lin_self_attentive.configuration_lin_self_attentive import LinSelfAttentiveConfig
    from .models.lin_self_attentive.modeling_lin_self_attentive import (
        LinSelfAttentiveForPairClassification,
        LinSelfAttentiveForSequenceClassification,
        LinSelfAttentiveModel,
    )
    from .models.lstmn.configuration_lstmn import LstmnConfig
    from .models.lstmn.modeling_lstmn import (
        LstmnForCausalLM,
        LstmnForPairClassification,
        LstmnForSequenceClassification,
        LstmnModel,
    )
    from .models.proto_hatt.configuration_proto_hatt import ProtoHattConfig
    from .models.proto_hatt.modeling_proto_hatt import (
        ProtoHattForFewShotClassification,
        ProtoHattModel,
        ProtoHattProtoNetForFewShotClassification,
    )
    from .models.sgm.configuration_sgm import SgmConfig
    from .models.sgm.generation_sgm import sgm_original_beam_search
    from .models.sgm.modeling_sgm import SgmForMultiLabelClassification, SgmForMultiLabelGeneration, SgmModel
    from .models.stcka.configuration_stcka import StckaConfig
    from .models.stcka.modeling_stcka import StckaForSequenceClassification, StckaModel
    from .models.vaswani_transformer.configuration_vaswani_transformer import VaswaniTransformerConfig
    from .models.vaswani_transformer.modeling_vaswani_transformer import (
        VaswaniTransformerForConditionalGeneration,
        VaswaniTransformerModel,
    )
    from .models.vaswani_transformer.visualization_vaswani_transformer import bertviz_view
    from .pictures import visualize
    from .registry import ARCHITECTURES, get_architecture, list_models
