"""The registry row of AttentionXML (`hf_attn.registry.row.Architecture`)."""

from hf_attn.data.kinds import MULTI_HOT, SENTENCE
from hf_attn.registry.row import Architecture, Head, Paper
from hf_attn.tokenization.kinds import WORD_LEVEL_TOKENIZER

from .arguments_attention_xml import AttentionXmlViewArguments
from .configuration_attention_xml import AttentionXmlConfig
from .kinds import LABEL_TREE
from .modeling_attention_xml import (
    AttentionXmlForLabelTree,
    AttentionXmlForSequenceClassification,
    AttentionXmlModel,
)
from .synthetic_attention_xml import example_files
from .visualization_attention_xml import top_labels_view

ARCHITECTURE = Architecture(
    name="attention_xml",
    display_name="AttentionXML",
    config_class=AttentionXmlConfig,
    base_model_class=AttentionXmlModel,
    heads=(
        Head(
            AttentionXmlForSequenceClassification,
            "AutoModelForSequenceClassification",
            SENTENCE,
            "text-classification",
            labels=MULTI_HOT,
            attention_fields=("label_attentions",),
            # One map per label over the whole text: a label's evidence words are scored by the label's own row,
            # which the task shape's evidence column (one position per example) cannot name.
            scores_evidence=False,
        ),
        Head(
            AttentionXmlForLabelTree,
            None,  # `AutoModelForSequenceClassification` is the flat model's; load with this class or `hf-attn`
            SENTENCE,
            "text-classification",
            labels=LABEL_TREE,
            attention_fields=("label_attentions",),  # the last level's, for the candidates it scored
            scores_evidence=False,
        ),
    ),
    paper=Paper(
        title=(
            "AttentionXML: Label Tree-based Attention-Aware Deep Model for High-Performance Extreme Multi-Label "
            "Text Classification"
        ),
        authors="Ronghui You, Zihan Zhang, Ziye Wang, Suyang Dai, Hiroshi Mamitsuka, Shanfeng Zhu",
        year=2019,
        venue="NeurIPS",
        arxiv="1811.01727",
        bibtex=(
            "@inproceedings{you2019attentionxml,\n"
            "  title     = {AttentionXML: Label Tree-based Attention-Aware Deep Model for High-Performance Extreme\n"
            "               Multi-Label Text Classification},\n"
            "  author    = {You, Ronghui and Zhang, Zihan and Wang, Ziye and Dai, Suyang and Mamitsuka, Hiroshi and\n"
            "               Zhu, Shanfeng},\n"
            "  booktitle = {Advances in Neural Information Processing Systems (NeurIPS)},\n"
            "  year      = {2019},\n"
            "  url       = {https://arxiv.org/abs/1811.01727}\n"
            "}"
        ),
    ),
    original_code="https://github.com/yourh/AttentionXML",
    tokenizer=WORD_LEVEL_TOKENIZER,
    synthetic_task="label_topics",
    example_files=example_files,
    attention_fields={"label_attentions": "attention_mask#labels"},
    tiny_config={
        "vocab_size": 50,
        "embedding_size": 12,
        "hidden_size": 8,
        "num_hidden_layers": 1,
        "linear_sizes": [16],
        "hidden_dropout_prob": 0.1,
        "embedding_dropout_prob": 0.1,
        "num_labels": 6,
        # A label tree of 3 levels (2, 3 and 6 nodes: `contiguous_tree`) whose beam keeps 1 of 2 nodes.
        "tree_children": 2,
        "tree_cluster_size": 2,
        "tree_top_candidates": 1,
    },
    attention_view=top_labels_view,
    view_arguments=AttentionXmlViewArguments,
    tags=("extreme-multi-label", "label-wise-attention", "label-tree", "bilstm"),
    converter="convert_attention_xml_original_to_hf",
    tasks="tasks_attention_xml",
)
