"""The one table of hf_attn: every architecture, its classes, paper, original code, tokenizer, synthetic task and
card metadata. Auto registration, the common tests, the CLI and the model cards all read it.

Adding an architecture = adding one `Architecture(...)` to `ARCHITECTURES`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import transformers
from transformers import AutoConfig, AutoTokenizer, PreTrainedConfig, PreTrainedModel, PreTrainedTokenizerFast

from .models.lin_self_attentive import (
    LinSelfAttentiveConfig,
    LinSelfAttentiveForPairClassification,
    LinSelfAttentiveForSequenceClassification,
    LinSelfAttentiveModel,
)
from .models.vaswani_transformer import (
    VaswaniTransformerConfig,
    VaswaniTransformerForConditionalGeneration,
    VaswaniTransformerModel,
)


@dataclass(frozen=True)
class Paper:
    """The paper an architecture implements."""

    title: str
    authors: str
    year: int
    venue: str
    arxiv: str
    bibtex: str

    @property
    def url(self) -> str:
        return f"https://arxiv.org/abs/{self.arxiv}"


@dataclass(frozen=True)
class Head:
    """A model class with the transformers Auto class it registers under (`None`: no Auto class fits, e.g. sentence
    pairs), the input shape it takes (`sentence`, `sentence_pair`, `seq2seq`, ... as in DESIGN §5), and the
    forward arguments that make it return its attention maps."""

    model_class: type[PreTrainedModel]
    auto_class: str | None
    inputs: str
    pipeline_tag: str | None = None
    attention_kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Architecture:
    """One row of the registry.

    Attributes:
        name: the `model_type`, also the folder name under `hf_attn/models` and `model_cards`.
        display_name: how people call it.
        config_class / base_model_class / heads: the classes (the base registers with `AutoModel`).
        paper / original_code: provenance for cards and docs.
        tokenizer: the tokenizer kind (`word_level`, `bpe`, ...).
        synthetic_task: the task in `hf_attn.data` it learns in tests and the demo.
        attention_fields: output field -> the input mask over its last axis, for every field holding attention
            distributions (a tensor or a tuple of per-layer tensors; rows sum to 1 over unmasked keys). The common
            tests check them; the first one is scored against a synthetic task's evidence.
        tiny_config: keyword arguments of a config small enough for unit tests.
        license / tags: card metadata.
    """

    name: str
    display_name: str
    config_class: type[PreTrainedConfig]
    base_model_class: type[PreTrainedModel]
    heads: tuple[Head, ...]
    paper: Paper
    original_code: str | None
    tokenizer: str
    synthetic_task: str
    attention_fields: dict[str, str]
    tiny_config: dict[str, Any] = field(default_factory=dict)
    license: str = "apache-2.0"
    tags: tuple[str, ...] = ()


ARCHITECTURES: dict[str, Architecture] = {
    architecture.name: architecture
    for architecture in [
        Architecture(
            name="lin_self_attentive",
            display_name="Structured Self-Attentive Sentence Embedding",
            config_class=LinSelfAttentiveConfig,
            base_model_class=LinSelfAttentiveModel,
            heads=(
                Head(
                    LinSelfAttentiveForSequenceClassification,
                    "AutoModelForSequenceClassification",
                    "sentence",
                    "text-classification",
                ),
                Head(LinSelfAttentiveForPairClassification, None, "sentence_pair", "text-classification"),
            ),
            paper=Paper(
                title="A Structured Self-attentive Sentence Embedding",
                authors="Zhouhan Lin, Minwei Feng, Cicero Nogueira dos Santos, Mo Yu, Bing Xiang, Bowen Zhou, "
                "Yoshua Bengio",
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
            tokenizer="word_level",
            synthetic_task="cue_sentiment",
            attention_fields={"hop_attentions": "attention_mask", "pair_hop_attentions": "pair_attention_mask"},
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
        ),
        Architecture(
            name="vaswani_transformer",
            display_name="Transformer (Attention Is All You Need)",
            config_class=VaswaniTransformerConfig,
            base_model_class=VaswaniTransformerModel,
            heads=(
                Head(
                    VaswaniTransformerForConditionalGeneration,
                    "AutoModelForSeq2SeqLM",
                    "seq2seq",
                    "translation",
                    attention_kwargs={"output_attentions": True},
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
            tokenizer="bpe",
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
            tags=("transformer", "encoder-decoder", "translation"),
        ),
    ]
}


def get_architecture(name: str) -> Architecture:
    """The registry row of `name` (a `model_type`), with a clear error for unknown names."""
    if name not in ARCHITECTURES:
        raise ValueError(f"Unknown architecture {name!r}; hf_attn has: {', '.join(sorted(ARCHITECTURES))}.")
    return ARCHITECTURES[name]


def list_models() -> list[str]:
    """The registered architecture names."""
    return sorted(ARCHITECTURES)


def register_all() -> None:
    """Registers every config, model and tokenizer with the Auto classes, and hf_attn's pipelines. Idempotent.

    Also marks each class for `register_for_auto_class`, so `save_pretrained` writes `auto_map` and copies the model
    code into the folder: users without hf_attn load it with `trust_remote_code=True`.
    """
    from .pipelines import register_pipelines

    register_pipelines()
    for architecture in ARCHITECTURES.values():
        config_class = architecture.config_class
        AutoConfig.register(architecture.name, config_class, exist_ok=True)
        config_class.register_for_auto_class()
        AutoTokenizer.register(config_class, tokenizer_class=PreTrainedTokenizerFast, exist_ok=True)
        for model_class, auto_class in [(architecture.base_model_class, "AutoModel")] + [
            (head.model_class, head.auto_class) for head in architecture.heads if head.auto_class is not None
        ]:
            getattr(transformers, auto_class).register(config_class, model_class, exist_ok=True)
            model_class.register_for_auto_class(auto_class)
