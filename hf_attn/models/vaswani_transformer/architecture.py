"""The registry row of Transformer (Attention Is All You Need) (`hf_attn.registry.row.Architecture`)."""

from hf_attn.data.kinds import SEQ2SEQ, TOKEN_VOCAB
from hf_attn.registry.row import Architecture, Head, Paper
from hf_attn.tokenization.kinds import BPE_TOKENIZER

from .arguments_vaswani_transformer import VaswaniTransformerViewArguments
from .configuration_vaswani_transformer import VaswaniTransformerConfig
from .modeling_vaswani_transformer import (
    VaswaniTransformerForConditionalGeneration,
    VaswaniTransformerModel,
)
from .schedules_vaswani_transformer import SCHEDULES
from .visualization_vaswani_transformer import transformer_view

ARCHITECTURE = Architecture(
    name="vaswani_transformer",
    display_name="Transformer (Attention Is All You Need)",
    config_class=VaswaniTransformerConfig,
    base_model_class=VaswaniTransformerModel,
    heads=(
        Head(
            VaswaniTransformerForConditionalGeneration,
            "AutoModelForSeq2SeqLM",
            SEQ2SEQ,
            "translation",
            attention_kwargs={"output_attentions": True},
            labels=TOKEN_VOCAB,
            attention_fields=("cross_attentions", "encoder_attentions", "decoder_attentions"),
        ),
    ),
    paper=Paper(
        title="Attention Is All You Need",
        authors="Ashish Vaswani, Noam Shazeer, Niki Parmar, Jakob Uszkoreit, Llion Jones, Aidan N. Gomez, "
        "Łukasz Kaiser, Illia Polosukhin",
        year=2017,
        venue="NeurIPS",
        arxiv="1706.03762",
        bibtex=(
            "@inproceedings{vaswani2017attention,\n"
            "  title     = {Attention Is All You Need},\n"
            "  author    = {Vaswani, Ashish and Shazeer, Noam and Parmar, Niki and Uszkoreit, Jakob and\n"
            "               Jones, Llion and Gomez, Aidan N. and Kaiser, {\\L}ukasz and Polosukhin, Illia},\n"
            "  booktitle = {Advances in Neural Information Processing Systems (NeurIPS)},\n"
            "  year      = {2017},\n"
            "  url       = {https://arxiv.org/abs/1706.03762}\n"
            "}"
        ),
    ),
    original_code="https://github.com/tensorflow/tensor2tensor",
    tokenizer=BPE_TOKENIZER,
    synthetic_task="translation",
    attention_fields={
        "encoder_attentions": "attention_mask",
        "decoder_attentions": "decoder_attention_mask",
        "cross_attentions": "attention_mask",
    },
    tiny_config={
        "vocab_size": 48,
        "d_model": 16,
        "encoder_layers": 2,
        "decoder_layers": 2,
        "encoder_attention_heads": 4,
        "decoder_attention_heads": 4,
        "encoder_ffn_dim": 24,
        "decoder_ffn_dim": 28,
        "dropout": 0.05,
    },
    attention_view=transformer_view,
    view_arguments=VaswaniTransformerViewArguments,
    tags=("transformer", "encoder-decoder", "translation"),
    converter="convert_vaswani_transformer_to_hf",
    schedules=SCHEDULES,
)
