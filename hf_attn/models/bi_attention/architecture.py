"""The registry row of BI-Attention (attention-based bilingual LSTM) (`hf_attn.registry.row.Architecture`)."""

from hf_attn.data.kinds import CLASS, DOCUMENT_PAIR
from hf_attn.registry.row import Architecture, Head, Paper
from hf_attn.tokenization.kinds import DOCUMENT_TOKENIZER

from . import synthetic_bi_attention  # noqa: F401  (registers its synthetic task, bilingual_documents)
from .configuration_bi_attention import BiAttentionConfig
from .modeling_bi_attention import BiAttentionForDocumentClassification, BiAttentionModel

ARCHITECTURE = Architecture(
    name="bi_attention",
    display_name="BI-Attention (attention-based bilingual LSTM)",
    config_class=BiAttentionConfig,
    base_model_class=BiAttentionModel,
    heads=(
        Head(
            BiAttentionForDocumentClassification,
            "AutoModelForSequenceClassification",
            DOCUMENT_PAIR,
            "text-classification",
            attention_fields=(
                "pair_sentence_attentions",
                "pair_word_attentions",
                "sentence_attentions",
                "word_attentions",
            ),
            labels=CLASS,
        ),
    ),
    paper=Paper(
        title="Attention-based LSTM Network for Cross-Lingual Sentiment Classification",
        authors="Xinjie Zhou, Xiaojun Wan, Jianguo Xiao",
        year=2016,
        venue="EMNLP",
        arxiv=None,
        link="https://aclanthology.org/D16-1024/",
        bibtex=(
            "@inproceedings{zhou2016attention,\n"
            "  title     = {Attention-based {LSTM} Network for Cross-Lingual Sentiment Classification},\n"
            "  author    = {Zhou, Xinjie and Wan, Xiaojun and Xiao, Jianguo},\n"
            "  booktitle = {Proceedings of EMNLP},\n"
            "  pages     = {247--256},\n"
            "  year      = {2016},\n"
            "  doi       = {10.18653/v1/D16-1024},\n"
            "  url       = {https://aclanthology.org/D16-1024/}\n"
            "}"
        ),
    ),
    original_code=None,
    tokenizer=DOCUMENT_TOKENIZER,
    synthetic_task="bilingual_documents",
    # The second view first: on the task's held-out split only it carries the evidence sentence.
    attention_fields={
        "pair_sentence_attentions": "pair_attention_mask/sentences",
        "pair_word_attentions": "pair_attention_mask",
        "sentence_attentions": "attention_mask/sentences",
        "word_attentions": "attention_mask",
    },
    tiny_config={
        "vocab_size": 50,
        "embedding_size": 12,
        "word_hidden_size": 8,
        "sentence_hidden_size": 6,
        "attention_size": 10,
        "hidden_dropout_prob": 0.1,
        "num_labels": 3,
    },
    tags=("hierarchical-attention", "cross-lingual", "semi-supervised", "lstm"),
)
