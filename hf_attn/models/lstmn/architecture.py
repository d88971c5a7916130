"""The registry row of LSTMN (Long Short-Term Memory-Network) (`hf_attn.registry.row.Architecture`)."""

from hf_attn.data.kinds import CLASS, SENTENCE, SENTENCE_PAIR, TOKEN_VOCAB
from hf_attn.registry.row import Architecture, Head, Paper
from hf_attn.tokenization.kinds import WORD_LEVEL_TOKENIZER

from . import synthetic_lstmn  # noqa: F401  (registers its synthetic task, long_range_cue)
from .configuration_lstmn import LstmnConfig
from .modeling_lstmn import (
    LstmnForCausalLM,
    LstmnForPairClassification,
    LstmnForSequenceClassification,
    LstmnModel,
)

ARCHITECTURE = Architecture(
    name="lstmn",
    display_name="LSTMN (Long Short-Term Memory-Network)",
    config_class=LstmnConfig,
    base_model_class=LstmnModel,
    heads=(
        Head(
            LstmnForSequenceClassification,
            "AutoModelForSequenceClassification",
            SENTENCE,
            "text-classification",
            attention_kwargs={"output_attentions": True},
            attention_fields=("intra_attentions",),
            scores_evidence=False,
            labels=CLASS,
        ),
        Head(
            LstmnForPairClassification,
            None,
            SENTENCE_PAIR,
            "text-classification",
            attention_kwargs={"output_attentions": True},
            attention_fields=("inter_attentions", "intra_attentions", "pair_intra_attentions"),
            labels=CLASS,
        ),
        Head(
            LstmnForCausalLM,
            "AutoModelForCausalLM",
            SENTENCE,
            "text-generation",
            labels=TOKEN_VOCAB,
            attention_kwargs={"output_attentions": True},
            attention_fields=("intra_attentions",),
            scores_evidence=False,
        ),
    ),
    paper=Paper(
        title="Long Short-Term Memory-Networks for Machine Reading",
        authors="Jianpeng Cheng, Li Dong, Mirella Lapata",
        year=2016,
        venue="EMNLP",
        arxiv="1601.06733",
        bibtex=(
            "@inproceedings{cheng2016long,\n"
            "  title     = {Long Short-Term Memory-Networks for Machine Reading},\n"
            "  author    = {Cheng, Jianpeng and Dong, Li and Lapata, Mirella},\n"
            "  booktitle = {Proceedings of EMNLP},\n"
            "  pages     = {551--561},\n"
            "  year      = {2016},\n"
            "  doi       = {10.18653/v1/D16-1053},\n"
            "  url       = {https://arxiv.org/abs/1601.06733}\n"
            "}"
        ),
    ),
    original_code="https://github.com/cheng6076/SNLI-attention",
    tokenizer=WORD_LEVEL_TOKENIZER,
    synthetic_task="long_range_cue",
    # Inter-attention first: on a pair task its rows (hypothesis tokens) are scored against the premise's
    # evidence.
    attention_fields={
        "inter_attentions": "attention_mask@pair_attention_mask",
        "intra_attentions": "attention_mask/causal",
        "pair_intra_attentions": "pair_attention_mask/causal",
    },
    tiny_config={
        "vocab_size": 50,
        "embedding_size": 12,
        "hidden_size": 8,
        "num_hidden_layers": 2,
        "attention_size": 10,
        "classifier_hidden_size": 9,
        "hidden_dropout_prob": 0.1,
        "initializer_range": 0.3,  # at these widths the original's 0.05 leaves the gradients ~1e-20
        "num_labels": 3,
    },
    tags=("lstmn", "intra-attention", "memory-network", "lstm", "language-modeling"),
)
