"""The registry row of STCKA (`hf_attn.registry.row.Architecture`)."""

from hf_attn.data.kinds import CLASS
from hf_attn.registry.row import Architecture, Head, Paper

from .arguments_stcka import StckaArguments
from .configuration_stcka import StckaConfig
from .kinds import CONCEPT_TOKENIZER, SENTENCE_CONCEPTS
from .modeling_stcka import StckaForSequenceClassification, StckaModel
from .synthetic_stcka import example_files  # the module registers the concept_topics task
from .visualization_stcka import stcka_view

ARCHITECTURE = Architecture(
    name="stcka",
    display_name="STCKA (Short-Text Classification with Knowledge-Powered Attention)",
    config_class=StckaConfig,
    base_model_class=StckaModel,
    heads=(
        Head(
            StckaForSequenceClassification,
            "AutoModelForSequenceClassification",
            SENTENCE_CONCEPTS,
            "text-classification",
            attention_fields=("concept_attentions", "cst_attentions", "ccs_attentions", "self_attentions"),
            labels=CLASS,
        ),
    ),
    paper=Paper(
        title="Deep Short Text Classification with Knowledge Powered Attention",
        authors="Jindong Chen, Yizhou Hu, Jingping Liu, Yanghua Xiao, Haiyun Jiang",
        year=2019,
        venue="AAAI",
        arxiv="1902.08050",
        bibtex=(
            "@inproceedings{chen2019deep,\n"
            "  title     = {Deep Short Text Classification with Knowledge Powered Attention},\n"
            "  author    = {Chen, Jindong and Hu, Yizhou and Liu, Jingping and Xiao, Yanghua and Jiang, Haiyun},\n"
            "  booktitle = {Proceedings of the AAAI Conference on Artificial Intelligence},\n"
            "  year      = {2019},\n"
            "  url       = {https://arxiv.org/abs/1902.08050}\n"
            "}"
        ),
    ),
    original_code="https://github.com/AIRobotZhang/STCKA",
    tokenizer=CONCEPT_TOKENIZER,
    synthetic_task="concept_topics",
    example_files=example_files,
    # The concept maps are distributions over the concept set; the self-attention reads the text's tokens.
    attention_fields={
        "concept_attentions": "concept_attention_mask",
        "cst_attentions": "concept_attention_mask",
        "ccs_attentions": "concept_attention_mask",
        "self_attentions": "attention_mask@attention_mask",
    },
    tiny_config={
        "vocab_size": 50,
        "concept_vocab_size": 30,
        "embedding_size": 12,
        "char_feature_size": 4,
        "hidden_size": 8,
        "num_labels": 3,
    },
    attention_view=stcka_view,
    # What decides a short text is the concepts its entities link to (§3): the faithfulness measures rank and erase
    # the concepts by their final attention (`concept_attentions`, a of eq. 5), not the words.
    importance_over="concept_attention_mask",
    tags=("knowledge", "concepts", "short-text", "self-attention", "bilstm"),
    converter="convert_stcka_original_to_hf",
    arguments=StckaArguments,
)
