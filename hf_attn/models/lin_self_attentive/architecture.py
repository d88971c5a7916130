"""The registry row of Structured Self-Attentive Sentence Embedding (`hf_attn.registry.row.Architecture`)."""

from hf_attn.data.kinds import CLASS, SENTENCE, SENTENCE_PAIR
from hf_attn.registry.row import Architecture, Head, Paper
from hf_attn.tokenization.kinds import WORD_LEVEL_TOKENIZER

from .configuration_lin_self_attentive import LinSelfAttentiveConfig
from .modeling_lin_self_attentive import (
    LinSelfAttentiveForPairClassification,
    LinSelfAttentiveForSequenceClassification,
    LinSelfAttentiveModel,
)

ARCHITECTURE = Architecture(
    name="lin_self_attentive",
    display_name="Structured Self-Attentive Sentence Embedding",
    config_class=LinSelfAttentiveConfig,
    base_model_class=LinSelfAttentiveModel,
    heads=(
        Head(
            LinSelfAttentiveForSequenceClassification,
            "AutoModelForSequenceClassification",
            SENTENCE,
            "text-classification",
            attention_fields=("hop_attentions",),
            labels=CLASS,
        ),
        Head(
            LinSelfAttentiveForPairClassification,
            None,
            SENTENCE_PAIR,
            "text-classification",
            attention_fields=("hop_attentions", "pair_hop_attentions"),
            labels=CLASS,
        ),
    ),
    paper=Paper(
        title="A Structured Self-attentive Sentence Embedding",
        authors="Zhouhan Lin, Minwei Feng, Cicero Nogueira dos Santos, Mo Yu, Bing Xiang, Bowen Zhou, Yoshua Bengio",
        year=2017,
        venue="ICLR",
        arxiv="1703.03130",
        bibtex=(
            "@inproceedings{lin2017structured,\n"
            "  title     = {A Structured Self-attentive Sentence Embedding},\n"
            "  author    = {Lin, Zhouhan and Feng, Minwei and Santos, Cicero Nogueira dos and Yu, Mo and\n"
            "               Xiang, Bing and Zhou, Bowen and Bengio, Yoshua},\n"
            "  booktitle = {International Conference on Learning Representations (ICLR)},\n"
            "  year      = {2017},\n"
            "  url       = {https://arxiv.org/abs/1703.03130}\n"
            "}"
        ),
    ),
    original_code="https://github.com/ExplorerFreda/Structured-Self-Attentive-Sentence-Embedding",
    tokenizer=WORD_LEVEL_TOKENIZER,
    synthetic_task="cue_sentiment",
    attention_fields={"hop_attentions": "attention_mask#hops", "pair_hop_attentions": "pair_attention_mask#hops"},
    tiny_config={
        "vocab_size": 50,
        "embedding_size": 12,
        "hidden_size": 8,
        "num_hidden_layers": 1,
        "attention_hidden_size": 10,
        "attention_hops": 3,
        "classifier_hidden_size": 16,
        "hidden_dropout_prob": 0.1,
        "num_labels": 3,
    },
    tags=("self-attention", "sentence-embedding", "bilstm"),
    converter="convert_lin_self_attentive_original_to_hf",
    # `hf-attn demo`: r = 4 hops with the penalty on; the paper's sizes (u=300, r=30, MLP 3000) take hours on a CPU.
    demo={
        "config": {
            "embedding_size": 32,
            "hidden_size": 32,
            "attention_hidden_size": 32,
            "attention_hops": 4,
            "classifier_hidden_size": 64,
            "hidden_dropout_prob": 0.1,
            "penalty_coefficient": 0.3,
        },
        "learning_rate": 1e-2,
    },
    default=True,  # `hf-attn train` without --arch: the smallest model that shows its attention
)
