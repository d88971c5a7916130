"""The registry row of SGM (`hf_attn.registry.row.Architecture`)."""

from hf_attn.data.kinds import LABEL_SEQUENCE, MULTI_HOT, SENTENCE, SEQ2SEQ
from hf_attn.registry.row import Architecture, Head, Paper
from hf_attn.tokenization.kinds import WORD_LEVEL_TOKENIZER

from .configuration_sgm import SgmConfig
from .modeling_sgm import (
    SgmForMultiLabelClassification,
    SgmForMultiLabelGeneration,
    SgmModel,
)
from .visualization_sgm import sgm_view

ARCHITECTURE = Architecture(
    name="sgm",
    display_name="SGM (Sequence Generation Model for multi-label classification)",
    config_class=SgmConfig,
    base_model_class=SgmModel,
    heads=(
        Head(
            SgmForMultiLabelGeneration,
            "AutoModelForSeq2SeqLM",
            SEQ2SEQ,
            "text-classification",
            labels=LABEL_SEQUENCE,
            attention_fields=("cross_attentions",),
        ),
        Head(
            SgmForMultiLabelClassification,
            "AutoModelForSequenceClassification",
            SENTENCE,
            "text-classification",
            labels=MULTI_HOT,
        ),
    ),
    paper=Paper(
        title="SGM: Sequence Generation Model for Multi-Label Classification",
        authors="Pengcheng Yang, Xu Sun, Wei Li, Shuming Ma, Wei Wu, Houfeng Wang",
        year=2018,
        venue="COLING",
        arxiv="1806.04822",
        bibtex=(
            "@inproceedings{yang2018sgm,\n"
            "  title     = {SGM: Sequence Generation Model for Multi-Label Classification},\n"
            "  author    = {Yang, Pengcheng and Sun, Xu and Li, Wei and Ma, Shuming and Wu, Wei and\n"
            "               Wang, Houfeng},\n"
            "  booktitle = {Proceedings of COLING},\n"
            "  pages     = {3915--3926},\n"
            "  year      = {2018},\n"
            "  url       = {https://arxiv.org/abs/1806.04822}\n"
            "}"
        ),
    ),
    original_code="https://github.com/lancopku/SGM",
    tokenizer=WORD_LEVEL_TOKENIZER,
    synthetic_task="label_topics",
    attention_fields={"cross_attentions": "attention_mask"},
    tiny_config={
        "vocab_size": 50,
        "embedding_size": 12,
        "encoder_hidden_size": 7,
        "decoder_hidden_size": 14,
        "encoder_layers": 2,
        "decoder_layers": 2,
        "attention_size": 10,
        "hidden_dropout_prob": 0.1,
        "global_embedding": True,
        "num_labels": 5,
    },
    attention_view=sgm_view,
    tags=("multi-label-classification", "sequence-generation", "global-embedding", "lstm"),
    converter="convert_sgm_original_to_hf",
)
