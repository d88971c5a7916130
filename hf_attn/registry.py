"""The one table of hf_attn: every architecture, its classes, paper, original code, tokenizer, synthetic task and
card metadata. Auto registration, the common tests, the CLI and the model cards all read it.

Adding an architecture = adding one `Architecture(...)` to `ARCHITECTURES`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import transformers
from transformers import AutoConfig, AutoTokenizer, PreTrainedConfig, PreTrainedModel, PreTrainedTokenizerFast

from .models.bi_attention import (
    BiAttentionConfig,
    BiAttentionForDocumentClassification,
    BiAttentionModel,
)
from .models.elmo import (
    ElmoConfig,
    ElmoForBidirectionalLanguageModeling,
    ElmoForSequenceClassification,
    ElmoForTokenClassification,
    ElmoModel,
)
from .models.han import HanConfig, HanForDocumentClassification, HanModel
from .models.lin_self_attentive import (
    LinSelfAttentiveConfig,
    LinSelfAttentiveForPairClassification,
    LinSelfAttentiveForSequenceClassification,
    LinSelfAttentiveModel,
)
from .models.lstmn import (
    LstmnConfig,
    LstmnForCausalLM,
    LstmnForPairClassification,
    LstmnForSequenceClassification,
    LstmnModel,
)
from .models.sgm import SgmConfig, SgmForMultiLabelClassification, SgmForMultiLabelGeneration, SgmModel
from .models.vaswani_transformer import (
    VaswaniTransformerConfig,
    VaswaniTransformerForConditionalGeneration,
    VaswaniTransformerModel,
)
from .tokenization.document import DocumentTokenizerFast
from .tokenization.elmo import ElmoCharacterTokenizerFast


@dataclass(frozen=True)
class Paper:
    """The paper an architecture implements."""

    title: str
    authors: str
    year: int
    venue: str
    arxiv: str | None
    bibtex: str
    link: str | None = None  # where a paper without an arXiv id lives (e.g. the ACL Anthology)

    @property
    def url(self) -> str:
        return f"https://arxiv.org/abs/{self.arxiv}" if self.arxiv else str(self.link)

    @property
    def reference(self) -> str:
        """`arXiv:<id>`, or the paper's link."""
        return f"arXiv:{self.arxiv}" if self.arxiv else self.url


@dataclass(frozen=True)
class Head:
    """A model class with the transformers Auto class it registers under (`None`: no Auto class fits, e.g. sentence
    pairs), the input shape it takes (`sentence`, `sentence_pair`, `seq2seq`, `characters`, ... as in DESIGN §5),
    the forward arguments that make it return its attention maps, and what its `labels` are: `class` (one class
    id per example, `(B,)`), `token_class` (a class id per token, `(B, T)`), `token_vocab` (a vocabulary id per
    token, `(B, T)`: language models, seq2seq targets), `label_sequence` (a target id per step, `(B, T)`, from the
    config's `target_vocab_size`: labels generated as a sequence) or `multi_hot` (`(B, num_labels)` indicators).
    `has_attention` is false for a head that returns no attention map (a baseline)."""

    model_class: type[PreTrainedModel]
    auto_class: str | None
    inputs: str
    pipeline_tag: str | None = None
    attention_kwargs: dict[str, Any] = field(default_factory=dict)
    labels: str = "class"
    has_attention: bool = True


@dataclass(frozen=True)
class Architecture:
    """One row of the registry.

    Attributes:
        name: the `model_type`, also the folder name under `hf_attn/models` and `model_cards`.
        display_name: how people call it.
        config_class / base_model_class / heads: the classes (the base registers with `AutoModel`).
        paper / original_code: provenance for cards and docs.
        tokenizer: the tokenizer kind (`word_level`, `bpe`, `document`, `characters`; see `TOKENIZER_CLASSES`).
        synthetic_task: the task in `hf_attn.data` it learns in tests and the demo.
        attention_fields: output field -> the input mask over its keys, for every field holding attention
            distributions (a tensor or a tuple of per-layer tensors; rows sum to 1 over unmasked keys, 0 when no key
            is unmasked). The mask is named as an input (`attention_mask`: keys are its last axis) or, for keys
            that are sentences of a document, as `attention_mask/sentences` (a sentence is unmasked when any of
            its words is). `attention_mask/causal`: a sequence attending over its own prefix, `(B, T, T)`: row t
            reads keys 0..t, and a padded token's row is empty. `attention_mask@pair_attention_mask`: rows are the
            tokens of the second mask (a padded one's row is empty), keys those of the first. The common tests
            check them; the first one is scored against a synthetic task's evidence.
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
                    labels="token_vocab",
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
        Architecture(
            name="han",
            display_name="Hierarchical Attention Network (HAN)",
            config_class=HanConfig,
            base_model_class=HanModel,
            heads=(
                Head(
                    HanForDocumentClassification,
                    "AutoModelForSequenceClassification",
                    "document",
                    "text-classification",
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
            tokenizer="document",
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
        ),
        Architecture(
            name="bi_attention",
            display_name="BI-Attention (attention-based bilingual LSTM)",
            config_class=BiAttentionConfig,
            base_model_class=BiAttentionModel,
            heads=(
                Head(
                    BiAttentionForDocumentClassification,
                    "AutoModelForSequenceClassification",
                    "document_pair",
                    "text-classification",
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
            tokenizer="document",
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
        ),
        Architecture(
            name="elmo",
            display_name="ELMo (deep contextualized word representations)",
            config_class=ElmoConfig,
            base_model_class=ElmoModel,
            heads=(
                Head(
                    ElmoForTokenClassification,
                    "AutoModelForTokenClassification",
                    "characters",
                    "token-classification",
                    labels="token_class",
                ),
                Head(
                    ElmoForSequenceClassification,
                    "AutoModelForSequenceClassification",
                    "characters",
                    "text-classification",
                ),
                Head(
                    ElmoForBidirectionalLanguageModeling, "AutoModelForPreTraining", "characters", labels="token_vocab"
                ),
            ),
            paper=Paper(
                title="Deep contextualized word representations",
                authors="Matthew E. Peters, Mark Neumann, Mohit Iyyer, Matt Gardner, Christopher Clark, Kenton Lee, "
                "Luke Zettlemoyer",
                year=2018,
                venue="NAACL",
                arxiv="1802.05365",
                bibtex=(
                    "@inproceedings{peters2018deep,\n"
                    "  title     = {Deep Contextualized Word Representations},\n"
                    "  author    = {Peters, Matthew E. and Neumann, Mark and Iyyer, Mohit and Gardner, Matt and\n"
                    "               Clark, Christopher and Lee, Kenton and Zettlemoyer, Luke},\n"
                    "  booktitle = {Proceedings of NAACL-HLT},\n"
                    "  pages     = {2227--2237},\n"
                    "  year      = {2018},\n"
                    "  doi       = {10.18653/v1/N18-1202},\n"
                    "  url       = {https://arxiv.org/abs/1802.05365}\n"
                    "}"
                ),
            ),
            original_code="https://github.com/allenai/bilm-tf",
            tokenizer="characters",
            synthetic_task="ambiguous_tagging",
            attention_fields={},  # ELMo has no attention; its scalar mix weighs layers, not tokens
            tiny_config={
                "character_embedding_size": 4,
                "filters": [[1, 4], [2, 6], [3, 7]],
                "num_highway_layers": 1,
                "projection_dim": 8,
                "hidden_size": 12,
                "num_hidden_layers": 2,
                "cell_clip": 3.0,
                "proj_clip": 2.5,
                "dropout": 0.1,
                "vocab_size": 30,
                "task_hidden_size": 5,
                "elmo_dropout": 0.2,
                "num_labels": 3,
            },
            tags=("elmo", "bilm", "character-cnn", "contextual-embeddings", "lstm"),
        ),
        Architecture(
            name="lstmn",
            display_name="LSTMN (Long Short-Term Memory-Network)",
            config_class=LstmnConfig,
            base_model_class=LstmnModel,
            heads=(
                Head(
                    LstmnForSequenceClassification,
                    "AutoModelForSequenceClassification",
                    "sentence",
                    "text-classification",
                ),
                Head(LstmnForPairClassification, None, "sentence_pair", "text-classification"),
                Head(LstmnForCausalLM, "AutoModelForCausalLM", "sentence", "text-generation", labels="token_vocab"),
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
            tokenizer="word_level",
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
        ),
        Architecture(
            name="sgm",
            display_name="SGM (Sequence Generation Model for multi-label classification)",
            config_class=SgmConfig,
            base_model_class=SgmModel,
            heads=(
                Head(
                    SgmForMultiLabelGeneration,
                    "AutoModelForSeq2SeqLM",
                    "seq2seq",
                    "text-classification",
                    labels="label_sequence",
                ),
                Head(
                    SgmForMultiLabelClassification,
                    "AutoModelForSequenceClassification",
                    "sentence",
                    "text-classification",
                    labels="multi_hot",
                    has_attention=False,
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
            tokenizer="word_level",
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
            tags=("multi-label-classification", "sequence-generation", "global-embedding", "lstm"),
        ),
    ]
}


# Tokenizer kind -> the class `AutoTokenizer` gives for an architecture's folders.
TOKENIZER_CLASSES: dict[str, type[PreTrainedTokenizerFast]] = {
    "word_level": PreTrainedTokenizerFast,
    "bpe": PreTrainedTokenizerFast,
    "document": DocumentTokenizerFast,
    "characters": ElmoCharacterTokenizerFast,
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
        tokenizer_class = TOKENIZER_CLASSES[architecture.tokenizer]
        AutoTokenizer.register(config_class, tokenizer_class=tokenizer_class, exist_ok=True)
        if tokenizer_class is not PreTrainedTokenizerFast:  # our own class: saved folders carry its code too
            tokenizer_class.register_for_auto_class("AutoTokenizer")
        for model_class, auto_class in [(architecture.base_model_class, "AutoModel")] + [
            (head.model_class, head.auto_class) for head in architecture.heads if head.auto_class is not None
        ]:
            getattr(transformers, auto_class).register(config_class, model_class, exist_ok=True)
            model_class.register_for_auto_class(auto_class)
