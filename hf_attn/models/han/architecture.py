"""The registry row of Hierarchical Attention Network (HAN) (`hf_attn.registry.row.Architecture`)."""

from hf_attn.data.kinds import CLASS, DOCUMENT
from hf_attn.registry.row import Architecture, Head, Paper
from hf_attn.tokenization.kinds import DOCUMENT_TOKENIZER

from .configuration_han import HanConfig
from .modeling_han import HanForDocumentClassification, HanModel

ARCHITECTURE = Architecture(
    name="han",
    display_name="Hierarchical Attention Network (HAN)",
    config_class=HanConfig,
    base_model_class=HanModel,
    heads=(
        Head(
            HanForDocumentClassification,
            "AutoModelForSequenceClassification",
            DOCUMENT,
            "text-classification",
            attention_fields=("sentence_attentions", "word_attentions"),
            labels=CLASS,
        ),
    ),
    paper=Paper(
        title="Hierarchical Attention Networks for Document Classification",
        authors="Zichao Yang, Diyi Yang, Chris Dyer, Xiaodong He, Alex Smola, Eduard Hovy",
        year=2016,
        venue="NAACL",
        arxiv=None,
        link="https://aclanthology.org/N16-1174/",
        bibtex=(
            "@inproceedings{yang2016hierarchical,\n"
            "  title     = {Hierarchical Attention Networks for Document Classification},\n"
            "  author    = {Yang, Zichao and Yang, Diyi and Dyer, Chris and He, Xiaodong and Smola, Alex and\n"
            "               Hovy, Eduard},\n"
            "  booktitle = {Proceedings of NAACL-HLT},\n"
            "  pages     = {1480--1489},\n"
            "  year      = {2016},\n"
            "  doi       = {10.18653/v1/N16-1174},\n"
            "  url       = {https://aclanthology.org/N16-1174/}\n"
            "}"
        ),
    ),
    original_code=None,
    tokenizer=DOCUMENT_TOKENIZER,
    synthetic_task="evidence_documents",
    attention_fields={
        "sentence_attentions": "attention_mask/sentences",
        "word_attentions": "attention_mask",
    },
    tiny_config={
        "vocab_size": 50,
        "embedding_size": 12,
        "word_hidden_size": 8,
        "sentence_hidden_size": 6,
        "word_attention_size": 10,
        "sentence_attention_size": 9,
        "hidden_dropout_prob": 0.1,
        "num_labels": 3,
    },
    tags=("hierarchical-attention", "document-classification", "gru"),
)
