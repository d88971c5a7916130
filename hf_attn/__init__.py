"""hf_attn: the classic attention architectures of NLP as native Hugging Face models.

`import hf_attn` registers every architecture with transformers' Auto classes and pipelines, and exposes each one's
config, models and extra public objects: the names its folder's `__init__.py` lists in `__all__` (`PUBLIC`), so
that a new architecture brings its names in its folder. It imports neither torch nor transformers: registration
happens as transformers loads its Auto classes (`hf_attn.auto_registration`), and each name is imported from its
module when first asked for, so that `hf-attn --help` and `hf-attn list` answer at once.
"""

from __future__ import annotations

import functools
import importlib
from typing import TYPE_CHECKING, Any

from .auto_registration import install as _install_auto_registration

__version__ = "0.1.0"


@functools.cache
def _public() -> dict[str, str]:
    """Every public name -> its module: hf_attn's own (`PACKAGE_NAMES`) and each model folder's (the `__all__` of
    its `__init__.py`), read when a name is first asked for."""
    from .registry_index import PACKAGE_NAMES, public_names

    return {**PACKAGE_NAMES, **public_names()}


_install_auto_registration()


def __getattr__(name: str) -> Any:
    if name in ("PUBLIC", "__all__"):  # `from hf_attn import *` reads `__all__` here too
        return dict(_public()) if name == "PUBLIC" else sorted(_public())
    module = _public().get(name)
    if module is None:
        raise AttributeError(f"module 'hf_attn' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_public()))


# What an IDE or a type checker follows, generated from the public names (`python -m hf_attn.registry_index`
# rewrites it; tests/test_auto_registration.py keeps it current).
if TYPE_CHECKING:
    # <generated: the public names>
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

    # </generated>
