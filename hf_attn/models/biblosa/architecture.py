"""The registry row of Bi-BloSAN (Bi-Directional Block Self-Attention) (`hf_attn.registry.row.Architecture`)."""

from hf_attn.data.kinds import CLASS, SENTENCE, SENTENCE_PAIR
from hf_attn.registry.row import Architecture, Head, Paper
from hf_attn.tokenization.kinds import WORD_LEVEL_TOKENIZER

from . import kinds, visualization_biblosa  # noqa: F401  (register its mask levels and their views)
from .configuration_biblosa import BiBlosaConfig
from .modeling_biblosa import (
    BiBlosaForPairClassification,
    BiBlosaForSequenceClassification,
    BiBlosaModel,
)

_SENTENCE_FIELDS = ("sentence_attentions", "sentence_feature_attentions", "block_attentions", "inter_block_attentions")

ARCHITECTURE = Architecture(
    name="biblosa",
    display_name="Bi-BloSAN (Bi-Directional Block Self-Attention)",
    config_class=BiBlosaConfig,
    base_model_class=BiBlosaModel,
    heads=(
        Head(
            BiBlosaForSequenceClassification,
            "AutoModelForSequenceClassification",
            SENTENCE,
            "text-classification",
            attention_kwargs={"output_attentions": True},  # the inter-block maps, quadratic in m, only when asked
            attention_fields=_SENTENCE_FIELDS,
            labels=CLASS,
        ),
        Head(
            BiBlosaForPairClassification,
            None,
            SENTENCE_PAIR,
            "text-classification",
            attention_kwargs={"output_attentions": True},
            attention_fields=_SENTENCE_FIELDS + tuple(f"pair_{field}" for field in _SENTENCE_FIELDS),
            labels=CLASS,
        ),
    ),
    paper=Paper(
        title="Bi-Directional Block Self-Attention for Fast and Memory-Efficient Sequence Modeling",
        authors="Tao Shen, Tianyi Zhou, Guodong Long, Jing Jiang, Chengqi Zhang",
        year=2018,
        venue="ICLR",
        arxiv="1804.00857",
        bibtex=(
            "@inproceedings{shen2018bidirectional,\n"
            "  title     = {Bi-Directional Block Self-Attention for Fast and Memory-Efficient Sequence Modeling},\n"
            "  author    = {Shen, Tao and Zhou, Tianyi and Long, Guodong and Jiang, Jing and Zhang, Chengqi},\n"
            "  booktitle = {International Conference on Learning Representations (ICLR)},\n"
            "  year      = {2018},\n"
            "  url       = {https://arxiv.org/abs/1804.00857}\n"
            "}"
        ),
    ),
    original_code="https://github.com/taoshen58/BiBloSA",
    tokenizer=WORD_LEVEL_TOKENIZER,
    synthetic_task="cue_sentiment",
    # Block maps (B, 2, m, r, r): keys are the real tokens of the query's block strictly before it (forward, [:, 0])
    # or after it (backward, [:, 1]); inter-block maps (B, 2, m, m): the blocks holding a real token, likewise.
    attention_fields={
        "sentence_attentions": "attention_mask",
        "sentence_feature_attentions": "attention_mask#features",
        "block_attentions": "attention_mask/blocks",
        "inter_block_attentions": "attention_mask/block_summaries",
        "pair_sentence_attentions": "pair_attention_mask",
        "pair_sentence_feature_attentions": "pair_attention_mask#features",
        "pair_block_attentions": "pair_attention_mask/blocks",
        "pair_inter_block_attentions": "pair_attention_mask/block_summaries",
    },
    tiny_config={
        "vocab_size": 50,
        "embedding_size": 12,
        "hidden_size": 8,
        "block_length": 3,
        "classifier_hidden_size": 16,
        "hidden_dropout_prob": 0.1,
        "num_labels": 3,
    },
    tags=("self-attention", "multi-dimensional-attention", "block-self-attention", "sentence-embedding"),
    converter="convert_biblosa_original_to_hf",
)
